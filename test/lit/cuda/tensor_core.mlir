// RUN: dlc-opt %s -p 'lower-to-gpu{allow-tf32=true}' | filecheck %s
// RUN: dlc-opt %s -p lower-to-gpu | filecheck %s --check-prefix=CORES
// RUN: %python -m dlc.backends.cuda --to-cuda %s | filecheck %s --check-prefix=CUDA
// An f32 matmul uses tf32 tensor cores only when allowed (as torch's allow_tf32):
// cp.async staging in two stages, mma.sync m16n8k8, 4 warps per 64 x 64 tile.

builtin.module {
  func.func @main_0_matmul(%a: memref<67x33xf32>, %b: memref<33x71xf32>, %out: memref<67x71xf32>) attributes {tloop.kernel, tloop.source = "graph.matmul", tloop.form = "matmul"} {
    %0 = arith.constant 0.000000e+00 : f32
    tloop.for %m = 0 to 67 {
      tloop.for %n = 0 to 71 {
        memref.store %0, %out[%m, %n] : memref<67x71xf32>
        tloop.for %k = 0 to 33 {
          %1 = memref.load %a[%m, %k] : memref<67x33xf32>
          %2 = memref.load %b[%k, %n] : memref<33x71xf32>
          %3 = arith.mulf %1, %2 : f32
          %4 = memref.load %out[%m, %n] : memref<67x71xf32>
          %5 = arith.addf %4, %3 : f32
          memref.store %5, %out[%m, %n] : memref<67x71xf32>
        }
      }
    }
    func.return
  }
  func.func @main(%a: memref<67x33xf32>, %b: memref<33x71xf32>, %r: memref<67x71xf32>) attributes {tloop.host, tloop.num_inputs = 2 : i64} {
    func.call @main_0_matmul(%a, %b, %r) : (memref<67x33xf32>, memref<33x71xf32>, memref<67x71xf32>) -> ()
    func.return
  }
}

// CHECK: gpu.schedule = "mma", gpu.kernel, gpu.grid = array<i64: 2, 2, 1>, gpu.block = array<i64: 128, 1, 1>
// CHECK: cuda.cp_async
// CHECK: cuda.cp_async_commit
// CHECK: cuda.cp_async_wait 1
// CHECK: cuda.mma_sync {{.*}} {ab_type = "tf32"}

// CORES: gpu.schedule = "matmul"
// CORES-NOT: cuda.mma_sync

// CUDA: // schedule: matmul (shared-memory tiles, register blocking per thread)
// CUDA-NOT: dlc_mma_m16n8k8_tf32(
