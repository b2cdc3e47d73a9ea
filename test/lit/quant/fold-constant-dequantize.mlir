// fold-constant folds graph.dequantize of a constant; with fold-dequantize=false (the CPU
// pipeline, before fold-qdq) it leaves it, so fold-qdq still sees the weight's integers.
// RUN: dlc-opt -p fold-constant %s | filecheck %s
// RUN: dlc-opt -p 'fold-constant{fold-dequantize=false}' %s | filecheck %s --check-prefix=KEEP

// CHECK-LABEL: func.func @w
// CHECK-NEXT:  %{{.*}} = graph.constant dense<[1.000000e+00, -5.000000e-01, 0.000000e+00]> : tensor<3xf32>
// CHECK-NOT:   graph.dequantize
// KEEP-LABEL:  func.func @w
// KEEP:        graph.dequantize
func.func @w() -> tensor<3xf32> {
  %q = graph.constant dense<[4, -2, 0]> : tensor<3xi8>
  %w = graph.dequantize %q {scale = array<f32: 0.25>} : (tensor<3xi8>) -> tensor<3xf32>
  func.return %w : tensor<3xf32>
}
