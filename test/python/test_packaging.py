"""pyproject.toml lists every package folder, so a wheel (not only `pip install -e`)
holds all of dlc: a new subpackage that is not listed fails here."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository root is the `dlc` package
NOT_SHIPPED = ("test", "conformance", "examples", "docs", "quickstart")


def test_every_package_folder_is_listed():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {"dlc"}
    for init in ROOT.rglob("__init__.py"):
        rel = init.parent.relative_to(ROOT)
        if rel.parts and (rel.parts[0] in NOT_SHIPPED or any(p.startswith(".") for p in rel.parts)):
            continue
        if rel.parts:
            found.add("dlc." + ".".join(rel.parts))
    assert sorted(found - listed) == [], "package folders missing from pyproject.toml [tool.setuptools] packages"
    assert sorted(listed - found) == [], "pyproject.toml lists packages that do not exist"


def test_c_runtime_sources_are_package_data():
    """dlc/runtime/c (the C runtime `dlc build-runtime` compiles) ships in the wheel."""
    import fnmatch

    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["dlc.runtime"]
    files = [p.relative_to(ROOT / "runtime").as_posix() for p in (ROOT / "runtime" / "c").rglob("*") if p.is_file()]
    assert files, "runtime/c holds no files"
    assert [f for f in files if not any(fnmatch.fnmatch(f, pat) for pat in patterns)] == []
