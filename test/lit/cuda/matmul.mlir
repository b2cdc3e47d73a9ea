// RUN: %python -m dlc.backends.cuda --to-cuda %s | filecheck %s
// Tiled matmul schedule: 64x64 block tiles, 16x16 threads with 4x4 register blocks,
// A and B staged through shared memory in 16-deep K slices; odd shapes are guarded.

builtin.module {
  func.func @main_0_matmul(%a: memref<2x67x33xf32>, %b: memref<33x71xf32>, %c: memref<2x67x71xf32>) attributes {tloop.kernel, tloop.source = "graph.matmul"} {
    %zero = arith.constant 0.0 : f32
    tloop.for %n = 0 to 2 parallel {
      tloop.for %i = 0 to 67 parallel {
        tloop.for %j = 0 to 71 parallel {
          memref.store %zero, %c[%n, %i, %j] : memref<2x67x71xf32>
          tloop.for %k = 0 to 33 {
            %x = memref.load %a[%n, %i, %k] : memref<2x67x33xf32>
            %y = memref.load %b[%k, %j] : memref<33x71xf32>
            %p = arith.mulf %x, %y : f32
            %s = memref.load %c[%n, %i, %j] : memref<2x67x71xf32>
            %t = arith.addf %s, %p : f32
            memref.store %t, %c[%n, %i, %j] : memref<2x67x71xf32>
          }
        }
      }
    }
    func.return
  }
  func.func @main(%a: memref<2x67x33xf32>, %c: memref<2x67x71xf32>) attributes {tloop.host, tloop.num_inputs = 1 : i64} {
    %w = tloop.weight "fc.weight" : memref<33x71xf32>
    func.call @main_0_matmul(%a, %w, %c) : (memref<2x67x33xf32>, memref<33x71xf32>, memref<2x67x71xf32>) -> ()
    func.return
  }
}

// CHECK: // @main_0_matmul: graph.matmul
// CHECK-NEXT: // launch: grid (2, 2, 2), block (16, 16, 1)
// CHECK-NEXT: // schedule: matmul (shared-memory tiles, register blocking per thread)
// CHECK-NEXT: // reads a 2x67x33xf32, b 33x71xf32; writes c 2x67x71xf32
// CHECK-NEXT: __global__ void __launch_bounds__(256) main_0_matmul(const float* a, const float* b, float* c)
// CHECK: __shared__ float a_tile[1024];
// CHECK: __shared__ float b_tile[1024];
// CHECK: float regs[16];
// CHECK: for (int64_t kt = 0; kt < 3; kt++) {
// CHECK: __syncthreads();
// CHECK: #pragma unroll
// CHECK-NEXT: for (int64_t kk = 0; kk < 16; kk++) {
// CHECK: extern "C" int dlc_main__device(const float* a, float* c, const void* const* dlc_weights)
// CHECK: const float* w = (const float*)dlc_weights[0];  // "fc.weight"
// CHECK: main_0_matmul<<<dim3(2, 2, 2), dim3(16, 16, 1)>>>(a, w, c);
// CHECK: extern "C" int dlc_main(const float* a, float* c, const void* const* dlc_weights)
// CHECK: status = (int)cudaMemcpy(d_weights[0], dlc_weights[0], 9372, cudaMemcpyHostToDevice);
