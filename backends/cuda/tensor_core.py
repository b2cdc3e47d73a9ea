"""Tensor-core facts shared by the mma schedule, the CUDA C writer and the emulator.

Fragment layouts are those of the PTX ISA ("Matrix fragments for mma.m16n8k16 with
floating point type" and "... mma.m16n8k8 with .tf32"): lane ``l`` of the warp has
``group = l // 4`` and ``tig = l % 4`` (thread id in group); A is row-major (M x K),
B column-major (K x N), C/D row-major 16 x 8 f32.

Why inline PTX ``mma.sync`` rather than ``wmma`` (<mma.h>): wmma fragments are
opaque (their lane layout is unspecified), so neither the emulator nor a predicated
epilogue could address single elements; ``mma.sync`` has a documented per-lane
layout that the schedule loads element by element from shared memory and the
emulator reproduces exactly.
"""

from __future__ import annotations

import numpy as np

from dlc.dialects.cuda import FRAGMENT_SIZES, MMA_SHAPES

WARP = 32
MMA_M, MMA_N = 16, 8
MMA_K = {"f16": 16, "bf16": 16, "tf32": 8}


def a_coords(ab_type: str, lane: int, i: int) -> tuple[int, int]:
    """(row, k) of element ``i`` of lane ``lane``'s A fragment."""
    group, tig = lane // 4, lane % 4
    if MMA_SHAPES[ab_type] == "m16n8k16":  # a0..a7: pairs along k; rows g, g+8; k halves 0-7, 8-15
        return group + 8 * ((i // 2) % 2), tig * 2 + i % 2 + 8 * (i // 4)
    return group + 8 * (i % 2), tig + 4 * (i // 2)  # m16n8k8 tf32: a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3


def b_coords(ab_type: str, lane: int, i: int) -> tuple[int, int]:
    """(k, col) of element ``i`` of lane ``lane``'s B fragment."""
    group, tig = lane // 4, lane % 4
    if MMA_SHAPES[ab_type] == "m16n8k16":  # b0..b3: k = 2t + (i%2) + 8 (i//2), n = g
        return tig * 2 + i % 2 + 8 * (i // 2), group
    return tig + 4 * i, group  # m16n8k8 tf32: b0 (t, g), b1 (t+4, g)


def c_coords(lane: int, i: int) -> tuple[int, int]:
    """(row, col) of element ``i`` of lane ``lane``'s C/D fragment (f32)."""
    group, tig = lane // 4, lane % 4
    return group + 8 * (i // 2), tig * 2 + i % 2


def round_inputs(ab_type: str, values: np.ndarray) -> np.ndarray:
    """f32 ``values`` rounded as the instruction's input type (returned as f64)."""
    values = np.asarray(values, np.float32)
    if ab_type == "f16":
        return values.astype(np.float16).astype(np.float64)
    if ab_type == "bf16":
        import ml_dtypes

        return values.astype(ml_dtypes.bfloat16).astype(np.float64)
    # tf32 (cvt.rna.tf32.f32): 10 mantissa bits, round to nearest, ties away from zero
    bits = values.view(np.uint32)
    finite = (bits & 0x7F800000) != 0x7F800000
    rounded = np.where(finite, (bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000), bits)
    return rounded.astype(np.uint32).view(np.float32).astype(np.float64)


def mma_warp(ab_type: str, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """D = A x B + C for one warp: ``a``/``b``/``c`` are (32, fragment size) per-lane
    registers; returns D's (32, 4) registers. Products are exact, sums in f64
    rounded to f32 once (the hardware adds in f32 in an unspecified order)."""
    k = MMA_K[ab_type]
    n_a, n_b, _ = FRAGMENT_SIZES[MMA_SHAPES[ab_type]]
    A = np.zeros((MMA_M, k))
    B = np.zeros((k, MMA_N))
    C = np.zeros((MMA_M, MMA_N))
    ra, rb = round_inputs(ab_type, a), round_inputs(ab_type, b)
    for lane in range(WARP):
        for i in range(n_a):
            A[a_coords(ab_type, lane, i)] = ra[lane, i]
        for i in range(n_b):
            B[b_coords(ab_type, lane, i)] = rb[lane, i]
        for i in range(4):
            C[c_coords(lane, i)] = c[lane, i]
    D = (A @ B + C).astype(np.float32)
    return np.array([[D[c_coords(lane, i)] for i in range(4)] for lane in range(WARP)], np.float32)


# --------------------------------------------------------------------------- CUDA C

PTX_TYPES = {"f16": "f16", "bf16": "bf16", "tf32": "tf32"}

CUDA_HELPERS = """\
// Tensor cores (dlc.backends.cuda.tensor_core): fragments live in f32 registers and are
// packed to the instruction's input type here; layouts are the PTX ISA's.
__device__ __forceinline__ uint32_t dlc_pack_f16(float lo, float hi) {
  __half2 h = __floats2half2_rn(lo, hi);
  return *(uint32_t*)&h;
}
__device__ __forceinline__ uint32_t dlc_pack_bf16(float lo, float hi) {
  __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *(uint32_t*)&h;
}
__device__ __forceinline__ uint32_t dlc_tf32(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}
__device__ __forceinline__ void dlc_mma_m16n8k16_f16(const float* a, const float* b, float* d) {
  uint32_t ra[4] = {dlc_pack_f16(a[0], a[1]), dlc_pack_f16(a[2], a[3]), dlc_pack_f16(a[4], a[5]), dlc_pack_f16(a[6], a[7])};
  uint32_t rb[2] = {dlc_pack_f16(b[0], b[1]), dlc_pack_f16(b[2], b[3])};
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]));
}
__device__ __forceinline__ void dlc_mma_m16n8k16_bf16(const float* a, const float* b, float* d) {
  uint32_t ra[4] = {dlc_pack_bf16(a[0], a[1]), dlc_pack_bf16(a[2], a[3]), dlc_pack_bf16(a[4], a[5]), dlc_pack_bf16(a[6], a[7])};
  uint32_t rb[2] = {dlc_pack_bf16(b[0], b[1]), dlc_pack_bf16(b[2], b[3])};
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]));
}
__device__ __forceinline__ void dlc_mma_m16n8k8_tf32(const float* a, const float* b, float* d) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(dlc_tf32(a[0])), "r"(dlc_tf32(a[1])), "r"(dlc_tf32(a[2])), "r"(dlc_tf32(a[3])),
                 "r"(dlc_tf32(b[0])), "r"(dlc_tf32(b[1])));
}
// cp.async of one 4-byte element, zero-filled (src-size 0) when the source is outside
// the matrix; commit/wait delimit the 2-stage pipeline's groups.
__device__ __forceinline__ void dlc_cp_async4(void* dst, const void* src, bool pred) {
  uint32_t s = (uint32_t)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" :: "r"(s), "l"(src), "r"(pred ? 4 : 0));
}
"""


def mma_call(ab_type: str, a: str, b: str, acc: str) -> str:
    return f"dlc_mma_{MMA_SHAPES[ab_type]}_{ab_type}({a}, {b}, {acc});"
