// RUN: dlc-opt %s -p lower-to-gpu | filecheck %s
// RUN: %python -m dlc.backends.cuda --to-ptx %s | filecheck %s --check-prefix=PTX
// User bindings are kept: a 13-row loop on blockIdx.x and a 7-wide loop on threadIdx.x
// launch 13 x 7 threads with no guard; the host copies in, launches, copies out.

builtin.module {
  func.func @main_0_neg(%x: memref<13x7xf32>, %y: memref<13x7xf32>) attributes {tloop.kernel, tloop.source = "graph.neg"} {
    tloop.for %i = 0 to 13 {
      tloop.for %j = 0 to 7 {
        %v = memref.load %x[%i, %j] : memref<13x7xf32>
        %n = arith.negf %v : f32
        memref.store %n, %y[%i, %j] : memref<13x7xf32>
      } {gpu.bind = "threadIdx.x"}
    } {gpu.bind = "blockIdx.x"}
    func.return
  }
  func.func @main(%x: memref<13x7xf32>, %y: memref<13x7xf32>) attributes {tloop.host, tloop.num_inputs = 1 : i64} {
    func.call @main_0_neg(%x, %y) : (memref<13x7xf32>, memref<13x7xf32>) -> ()
    func.return
  }
}

// CHECK:      func.func @main_0_neg({{.*}}) attributes {{{.*}}gpu.kernel, gpu.grid = array<i64: 13, 1, 1>, gpu.block = array<i64: 7, 1, 1>}
// CHECK-NEXT:   %i = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
// CHECK-NEXT:   %j = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
// CHECK-NOT:    scf.if
// CHECK:        memref.store
// CHECK:      func.func @main(
// CHECK-NOT:    "gpu.memcpy"
// CHECK:        "gpu.launch_func"({{.*}}%x, %y) <{kernel = @main_0_neg
// CHECK-NOT:    "gpu.memcpy"

// PTX:      .target sm_90
// PTX:      .visible .entry main_0_neg(
// PTX:      .maxntid 7, 1, 1
// PTX:      mov.u32 {{.*}}%ctaid.x
// PTX:      neg.f32
