// The drawing code of `dlc view` pages (tools/graph_view.py inlines it after dagre).
// Reads the graph JSON of <script id="dlc-graph">, lays it out with dagre (fused groups
// are compound nodes: boxes around their members) and draws SVG. When done, <body> gets
// data-rendered (the number of op boxes drawn); an error goes to data-error and the console.
"use strict";
(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const CHAR_W = 6.7, LINE_H = 14;  // 11px monospace
  const data = JSON.parse(document.getElementById("dlc-graph").textContent);
  const svg = document.getElementById("graph");
  const irPane = document.getElementById("ir");
  const profile = data.profile || null;

  function el(tag, attrs, parent) {
    const e = document.createElementNS(SVG, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }

  function fmtMs(us) { return (us / 1000).toFixed(us < 10000 ? 3 : 1) + " ms"; }

  // white -> red by the share of the slowest unit's time
  const maxUs = profile ? Math.max(1e-9, ...Object.values(profile.times)) : 1;
  function heat(us) {
    const t = Math.sqrt(Math.min(1, us / maxUs));
    const g = Math.round(245 - 185 * t), b = Math.round(235 - 200 * t);
    return `rgb(${Math.round(255 - 20 * t)},${g},${b})`;
  }

  function timeLine(id) {
    if (!profile || !(id in profile.times)) return null;
    const us = profile.times[id];
    return `${fmtMs(us)} (${(100 * us / Math.max(profile.total_us, 1e-9)).toFixed(1)}%)`;
  }

  function draw() {
    const g = new dagre.graphlib.Graph({ compound: true, multigraph: true });
    g.setGraph({ rankdir: "TB", nodesep: 18, ranksep: 28, edgesep: 8, marginx: 20, marginy: 20 });
    g.setDefaultEdgeLabel(() => ({}));
    for (const c of data.clusters) {
      g.setNode(c.id, { label: c.label, paddingTop: 18 });
      if (c.parent) g.setParent(c.id, c.parent);
    }
    const lines = {};
    for (const n of data.nodes) {
      const ls = [n.label];
      if (n.sub) ls.push(n.sub);
      const t = timeLine(n.id);
      if (t) ls.push(t);
      lines[n.id] = ls;
      const width = Math.max(...ls.map((s) => s.length)) * CHAR_W + 14;
      g.setNode(n.id, { width: width, height: ls.length * LINE_H + 8 });
      if (n.parent) g.setParent(n.id, n.parent);
    }
    data.edges.forEach((e, i) => {
      g.setEdge(e.from, e.to, { width: e.label.length * 5.6, height: 11, labelpos: "c" }, "e" + i);
    });
    dagre.layout(g);

    const root = el("g", { id: "viewport" }, svg);
    const clusterLayer = el("g", {}, root), edgeLayer = el("g", {}, root), nodeLayer = el("g", {}, root);
    for (const c of data.clusters) {
      const box = g.node(c.id);
      const cg = el("g", { class: "cluster " + c.kind, "data-id": c.id }, clusterLayer);
      const rect = el("rect", { x: box.x - box.width / 2, y: box.y - box.height / 2,
                                width: box.width, height: box.height, rx: 4 }, cg);
      const t = timeLine(c.id);
      if (t) rect.style.fill = heat(profile.times[c.id]);
      const text = el("text", { x: box.x - box.width / 2 + 5, y: box.y - box.height / 2 + 12 }, cg);
      const full = c.label + (t ? "  " + t : "");
      const room = Math.max(4, Math.floor((box.width - 10) / 6));  // 10px monospace
      text.textContent = full.length > room ? full.slice(0, room - 1) + "\u2026" : full;
      el("title", {}, cg).textContent = full;
      if (c.ir) {
        cg.addEventListener("click", (ev) => {
          ev.stopPropagation();
          irPane.textContent = c.ir + (t ? "\n\n// time: " + t : "");
        });
      }
    }
    el("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 6, markerHeight: 6,
                   orient: "auto" }, el("defs", {}, svg)).appendChild(
      el("path", { d: "M0,0L10,5L0,10z", fill: "#888" }));
    data.edges.forEach((e, i) => {
      const edge = g.edge({ v: e.from, w: e.to, name: "e" + i });
      const eg = el("g", { class: "edge" }, edgeLayer);
      const d = edge.points.map((p, k) => (k ? "L" : "M") + p.x.toFixed(1) + "," + p.y.toFixed(1)).join("");
      el("path", { d: d, "marker-end": "url(#arrow)" }, eg);
      const label = el("text", { x: edge.x, y: edge.y + 3, "text-anchor": "middle" }, eg);
      label.textContent = e.label;
    });
    let drawn = 0, selected = null;
    const boxes = {};
    for (const n of data.nodes) {
      const box = g.node(n.id);
      boxes[n.id] = { x: box.x, y: box.y, element: null };
      const ng = el("g", { class: "node " + n.kind, "data-id": n.id,
                           transform: `translate(${box.x - box.width / 2},${box.y - box.height / 2})` }, nodeLayer);
      const rect = el("rect", { width: box.width, height: box.height, rx: n.kind === "op" ? 3 : 10 }, ng);
      if (profile && n.id in profile.times) rect.style.fill = heat(profile.times[n.id]);
      lines[n.id].forEach((s, k) => {
        const t = el("text", { x: 7, y: 4 + LINE_H * (k + 1) - 3 }, ng);
        if (k === 0) t.setAttribute("font-weight", "bold");
        t.textContent = s;
      });
      ng.addEventListener("click", (ev) => {
        ev.stopPropagation();
        if (selected) selected.classList.remove("selected");
        selected = ng;
        ng.classList.add("selected");
        const t = timeLine(n.id);
        irPane.textContent = `// ${n.label} (#${n.id})\n` + n.ir + (t ? "\n\n// time: " + t : "");
      });
      boxes[n.id].element = ng;
      if (n.kind === "op") drawn++;
    }
    const size = g.graph();
    return { drawn: drawn, width: size.width, height: size.height, boxes: boxes };
  }

  // pan (drag) and zoom (wheel) through the viewBox
  function navigate(width, height, focus) {
    // start at the top, at full size unless the graph is wider than the pane
    const pw = Math.max(svg.clientWidth, 1), ph = Math.max(svg.clientHeight, 1);
    const scale = Math.min(1, pw / Math.max(width, 1));
    const view = { w: pw / scale, h: ph / scale, y: 0 };
    view.x = (width - view.w) / 2;
    if (focus) {  // page.html#<node id>: that node in the middle
      view.x = focus.x - view.w / 2;
      view.y = Math.max(0, focus.y - view.h / 2);
    }
    const apply = () => svg.setAttribute("viewBox", `${view.x} ${view.y} ${view.w} ${view.h}`);
    apply();
    svg.addEventListener("wheel", (ev) => {
      ev.preventDefault();
      const f = ev.deltaY > 0 ? 1.15 : 1 / 1.15;
      const r = svg.getBoundingClientRect();
      const px = view.x + (ev.clientX - r.left) / r.width * view.w;
      const py = view.y + (ev.clientY - r.top) / r.height * view.h;
      view.x = px - (px - view.x) * f; view.y = py - (py - view.y) * f;
      view.w *= f; view.h *= f;
      apply();
    }, { passive: false });
    let drag = null;
    svg.addEventListener("mousedown", (ev) => { drag = { x: ev.clientX, y: ev.clientY }; });
    window.addEventListener("mouseup", () => { drag = null; });
    window.addEventListener("mousemove", (ev) => {
      if (!drag) return;
      const r = svg.getBoundingClientRect();
      view.x -= (ev.clientX - drag.x) / r.width * view.w;
      view.y -= (ev.clientY - drag.y) / r.height * view.h;
      drag = { x: ev.clientX, y: ev.clientY };
      apply();
    });
  }

  try {
    const result = draw();
    const focus = result.boxes[decodeURIComponent(location.hash.slice(1))];
    navigate(result.width, result.height, focus);
    if (focus) focus.element.dispatchEvent(new MouseEvent("click"));
    const groups = data.clusters.filter((c) => c.kind === "group").length;
    let stats = `${data.op_count} ops, ${groups} fused groups`;
    if (profile) {
      stats += `; profile: ${fmtMs(profile.matched_us)} of ${fmtMs(profile.total_us)} in this graph's kernels`;
      if (profile.unmatched.length) stats += ` (not in this graph: ${profile.unmatched.join(", ")})`;
      document.getElementById("legend").innerHTML =
        ` <span style="background:${heat(0)}">&nbsp;fast&nbsp;</span>` +
        `<span style="background:${heat(maxUs)}">&nbsp;slow&nbsp;</span>`;
    }
    document.getElementById("stats").textContent = stats;
    document.body.setAttribute("data-rendered", String(result.drawn));
  } catch (err) {
    document.body.setAttribute("data-error", String(err));
    console.error("dlc view: " + err);
    throw err;
  }
})();
