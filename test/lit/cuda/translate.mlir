// RUN: dlc-translate --to-cuda %s | filecheck %s
// RUN: dlc-translate --to-ptx %s | filecheck %s --check-prefix=PTX
// Graph-level input: dlc-translate lowers it (lower-to-loops, lower-to-gpu) and emits
// one .cu: a grid-stride elementwise kernel, a block reduction, a tiled matmul, a conv.

func.func @add(%a: tensor<3x1x5xf32>, %b: tensor<1x7x5xf32>) -> tensor<3x7x5xf32> {
  %r = graph.add %a, %b : (tensor<3x1x5xf32>, tensor<1x7x5xf32>) -> tensor<3x7x5xf32>
  func.return %r : tensor<3x7x5xf32>
}
func.func @sum(%a: tensor<7x1000xf32>) -> tensor<7xf32> {
  %r = graph.reduce_sum %a {axes = array<i64: 1>, keepdims = false} : (tensor<7x1000xf32>) -> tensor<7xf32>
  func.return %r : tensor<7xf32>
}
func.func @mm(%a: tensor<67x33xf32>, %b: tensor<33x130xf32>) -> tensor<67x130xf32> {
  %r = graph.matmul %a, %b : (tensor<67x33xf32>, tensor<33x130xf32>) -> tensor<67x130xf32>
  func.return %r : tensor<67x130xf32>
}
func.func @conv(%x: tensor<1x3x11x13xf32>, %w: tensor<5x3x3x3xf32>) -> tensor<1x5x11x13xf32> {
  %r = graph.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x3x11x13xf32>, tensor<5x3x3x3xf32>) -> tensor<1x5x11x13xf32>
  func.return %r : tensor<1x5x11x13xf32>
}

// CHECK:      #include <cuda_runtime.h>
// CHECK:      // @add_0_add: graph.add
// CHECK-NEXT: // launch: grid (1, 1, 1), block (128, 1, 1)
// CHECK-NEXT: // schedule: generic (one thread per output element, grid-stride loop)
// CHECK-NEXT: // reads in0 3x1x5xf32, in1 1x7x5xf32; writes out 3x7x5xf32
// CHECK-NEXT: extern "C" __global__ void __launch_bounds__(128) add_0_add(const float* in0, const float* in1, float* out)
// CHECK:        const int64_t {{.*}} = (int64_t)blockIdx.x;
// CHECK:        if ({{t[0-9]+}}) {
// CHECK:      // @sum_0_reduce_sum: graph.reduce_sum
// CHECK-NEXT: // launch: grid (7, 1, 1), block (256, 1, 1)
// CHECK:        for (int64_t {{.*}} = 0; {{.*}} < 4; {{.*}}++) {
// CHECK:        __shfl_xor_sync(0xffffffffu, {{.*}}, 16)
// CHECK:        __shared__ float warp_partials[8];
// CHECK:        __syncthreads();
// CHECK:      // @mm_0_matmul: graph.matmul
// CHECK-NEXT: // launch: grid (3, 2, 1), block (16, 16, 1)
// CHECK:        __shared__ float a_tile[1024];
// CHECK:      // @conv_0_conv2d: graph.conv2d
// CHECK-NEXT: // launch: grid (3, 1, 1), block (256, 1, 1)
// CHECK:        float acc[1];
// CHECK:      extern "C" int dlc_add__device(const float* a, const float* b, float* result0, const void* const* dlc_weights) {
// CHECK:        add_0_add<<<dim3(1, 1, 1), dim3(128, 1, 1)>>>(a, b, result0);
// CHECK-NEXT:   DLC_CHECK(cudaGetLastError());
// CHECK:      extern "C" int dlc_add__copying(const float* a, const float* b, float* result0, const void* const* d_weights) {
// CHECK:        DLC_CHECK(cudaMalloc((void**)&d_a, 60));
// CHECK:        status = (int)cudaMemcpy(result0, d_result0, 420, cudaMemcpyDeviceToHost);
// CHECK:      extern "C" int dlc_add(const float* a, const float* b, float* result0, const void* const* dlc_weights) {
// CHECK:      extern "C" int dlc_mm(

// PTX: .visible .entry add_0_add(
// PTX: .visible .entry sum_0_reduce_sum(
// PTX: bar.sync 0;
// PTX: .visible .entry mm_0_matmul(
// PTX: .maxntid 16, 16, 1
// PTX: ld.shared.b32
// PTX: .visible .entry conv_0_conv2d(
