// RUN: not %python -m dlc.backends.cuda --to-cuda %s 2>&1 | filecheck %s
// A user binding asking for more threads per block than CUDA allows: one line, no traceback.

builtin.module {
  func.func @main_0_relu(%x: memref<2x2000xf32>, %y: memref<2x2000xf32>) attributes {tloop.kernel, tloop.source = "graph.relu"} {
    tloop.for %i = 0 to 2 {
      tloop.for %j = 0 to 2000 {
        %v = memref.load %x[%i, %j] : memref<2x2000xf32>
        memref.store %v, %y[%i, %j] : memref<2x2000xf32>
      } {gpu.bind = "threadIdx.x"}
    } {gpu.bind = "blockIdx.x"}
    func.return
  }
}

// CHECK: dlc-cuda: lower-to-gpu: kernel @main_0_relu: 2000 threads per block exceed the CUDA limit of 1024
// CHECK-NOT: Traceback
