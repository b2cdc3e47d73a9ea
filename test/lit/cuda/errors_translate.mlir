// RUN: not dlc-translate --to-cuda %s 2>&1 | filecheck %s
// RUN: not dlc-translate --to-ptx --arch sm_70 %s 2>&1 | filecheck %s --check-prefix=ARCH
// A custom op whose intermediate B (80000 bytes) every thread of the block reads:
// it would have to live in shared memory, which holds 48 KiB. One line, no traceback.

func.func @main(%a: tensor<100x200xf32>) -> tensor<100x200xf32> {
  %r = graph.custom %a {te = "B[i, j] = A[i, j] * 2.0\nC[i, j] = B[i, j] + B[0, j]"} : (tensor<100x200xf32>) -> tensor<100x200xf32>
  func.return %r : tensor<100x200xf32>
}

// CHECK: dlc-translate: error: --to-cuda: lower-to-gpu: kernel @main_0_custom: 80000 bytes of shared memory exceed the static limit of 49152
// CHECK-NOT: Traceback
// ARCH: dlc-translate: error: --to-ptx: emit-ptx: arch must be one of {{.*}}, got 'sm_70'
