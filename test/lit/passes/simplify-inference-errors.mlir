// simplify-inference's errors: it takes no options; a bad one is named in one line.
// RUN: not dlc-opt %s -p 'simplify-inference{level=2}' 2>&1 | filecheck %s
// CHECK: dlc-opt: error: pass 'simplify-inference' has no option 'level'
// CHECK-NOT: Traceback

func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}
