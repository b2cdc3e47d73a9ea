// RUN: %python -m dlc.backends.cuda --to-cuda %s | filecheck %s
// Row reduction schedule: one block per row, strided element loops, warp shuffles
// and one shared slot per warp.

builtin.module {
  func.func @main_0_softmax(%x: memref<5x37xf32>, %y: memref<5x37xf32>) attributes {tloop.kernel, tloop.source = "graph.softmax"} {
    tloop.for %r = 0 to 5 parallel {
      %m = memref.alloca() : memref<1xf32>
      %s = memref.alloca() : memref<1xf32>
      %c0 = arith.constant 0 : index
      %ninf = arith.constant -3.4e38 : f32
      %zero = arith.constant 0.0 : f32
      memref.store %ninf, %m[%c0] : memref<1xf32>
      memref.store %zero, %s[%c0] : memref<1xf32>
      tloop.for %k = 0 to 37 {
        %v = memref.load %x[%r, %k] : memref<5x37xf32>
        %a = memref.load %m[%c0] : memref<1xf32>
        %b = arith.maximumf %a, %v : f32
        memref.store %b, %m[%c0] : memref<1xf32>
      }
      tloop.for %k2 = 0 to 37 {
        %v = memref.load %x[%r, %k2] : memref<5x37xf32>
        %mx = memref.load %m[%c0] : memref<1xf32>
        %d = arith.subf %v, %mx : f32
        %e = math.exp %d : f32
        memref.store %e, %y[%r, %k2] : memref<5x37xf32>
        %a = memref.load %s[%c0] : memref<1xf32>
        %b = arith.addf %a, %e : f32
        memref.store %b, %s[%c0] : memref<1xf32>
      }
      tloop.for %k3 = 0 to 37 {
        %e = memref.load %y[%r, %k3] : memref<5x37xf32>
        %t = memref.load %s[%c0] : memref<1xf32>
        %q = arith.divf %e, %t : f32
        memref.store %q, %y[%r, %k3] : memref<5x37xf32>
      }
    }
    func.return
  }
  func.func @main(%x: memref<5x37xf32>, %y: memref<5x37xf32>) attributes {tloop.host, tloop.num_inputs = 1 : i64} {
    func.call @main_0_softmax(%x, %y) : (memref<5x37xf32>, memref<5x37xf32>) -> ()
    func.return
  }
}

// CHECK: // @main_0_softmax: graph.softmax
// CHECK: // launch: grid (5, 1, 1), block (64, 1, 1)
// CHECK: __global__ void __launch_bounds__(64) main_0_softmax(const float* x, float* y)
// CHECK: __shared__ float m[1];
// CHECK: __shfl_xor_sync(0xffffffffu, {{.*}}, 16)
// CHECK: __shared__ float warp_partials[2];
// CHECK: __syncthreads();
// CHECK: extern "C" int dlc_main__device(const float* x, float* y, const void* const* dlc_weights)
// CHECK: main_0_softmax<<<dim3(5, 1, 1), dim3(64, 1, 1)>>>(x, y);
// CHECK: extern "C" int dlc_main(const float* x, float* y, const void* const* dlc_weights)
