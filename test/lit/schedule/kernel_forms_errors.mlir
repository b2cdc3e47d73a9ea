// Kernel forms fail loudly: a kernel whose loops are not its form's (a renamed loop) stops
// tloop-default-schedule with one line naming the kernel, the form and the missing loop,
// instead of silently taking the generic schedule (slower, and no test would notice); so
// does a form without a schedule and a target string dlc cannot read.
// RUN: not dlc-opt %s --split-input-file -p tloop-default-schedule 2>&1 | filecheck %s --check-prefix=RENAMED
// RUN: not dlc-opt %s --split-input-file -p tloop-default-schedule 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not dlc-opt %s --split-input-file -p 'tloop-default-schedule{target="llvm -mcpu=nosuchcpu"}' 2>&1 | filecheck %s --check-prefix=BADCPU
// RUN: not dlc-opt %s --split-input-file -p 'tloop-default-schedule{target="llvm -mattr=avx512f"}' 2>&1 | filecheck %s --check-prefix=BADATTR
// RUN: not dlc-opt %s --split-input-file -p 'tloop-default-schedule{target="tpu"}' 2>&1 | filecheck %s --check-prefix=BADKIND

// RENAMED: kernel_forms_errors.mlir:[[# @LINE + 9]]:1: error: pass 'tloop-default-schedule' failed: kernel @mm_renamed of form 'matmul': no loop named 'm' (its schedule addresses the form's loops by name)
// RENAMED-NOT: Traceback
// UNKNOWN: error: pass 'tloop-default-schedule' failed: kernel @copy of form 'conv2d.bogus': no default schedule is registered for this form
// BADCPU: error: pass 'tloop-default-schedule' failed: unknown cpu 'nosuchcpu' for x86_64 in 'llvm -mcpu=nosuchcpu' (known: broadwell, {{.*}}; with -mattr=+... also alderlake
// BADATTR: error: pass 'tloop-default-schedule' failed: bad feature 'avx512f' in 'llvm -mattr=avx512f' (expected +name or -name
// BADKIND: error: pass 'tloop-default-schedule' failed: unknown target 'tpu' in 'tpu' (expected a kind, llvm or cuda or c, or a preset: host, {{.*}}aarch64
// CHECK-NOT: Traceback

// the matmul kernel of kernel_forms.mlir with loop %m renamed %row
func.func @mm_renamed(%a: memref<48x64xf32>, %b: memref<64x64xf32>, %out: memref<48x64xf32>) attributes {tloop.kernel, tloop.source = "graph.matmul", tloop.form = "matmul"} {
  tloop.for %row = 0 to 48 {
    tloop.for %n = 0 to 64 {
      %z = arith.constant 0.000000e+00 : f32
      memref.store %z, %out[%row, %n] : memref<48x64xf32>
      tloop.for %k = 0 to 64 {
        %x = memref.load %a[%row, %k] : memref<48x64xf32>
        %y = memref.load %b[%k, %n] : memref<64x64xf32>
        %p = arith.mulf %x, %y : f32
        %s = memref.load %out[%row, %n] : memref<48x64xf32>
        %t = arith.addf %s, %p : f32
        memref.store %t, %out[%row, %n] : memref<48x64xf32>
      }
    }
  }
  func.return
}

// -----

func.func @copy(%x: memref<8xf32>, %out: memref<8xf32>) attributes {tloop.kernel, tloop.form = "conv2d.bogus"} {
  tloop.for %i = 0 to 8 {
    %v = memref.load %x[%i] : memref<8xf32>
    memref.store %v, %out[%i] : memref<8xf32>
  }
  func.return
}
