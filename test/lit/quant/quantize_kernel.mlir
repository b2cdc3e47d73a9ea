// graph.quantize's kernel (kernels/quantized.py): a per-tensor quantize of an image loops
// over rows of a fixed length (8 rows of 1536, not 3 channels of 4096: the parallel loop
// has rows for every thread), and saturates with selects and the 1.5 * 2**23 bit trick
// (vectorizable) instead of a saturating fptosi (which LLVM scalarizes). A prime-sided
// image keeps the [N*C, H*W] view.
// RUN: dlc-opt -p 'legalize,lower-to-loops' %s | filecheck %s

// CHECK-LABEL: func.func @main_{{[0-9]+}}_quantize
// CHECK:       tloop.for %d0 = 0 to 8 {
// CHECK-NEXT:  tloop.for %d1 = 0 to 1536 {
// CHECK:       arith.divf
// CHECK:       math.roundeven
// CHECK:       arith.cmpf uno
// CHECK:       arith.cmpf olt
// CHECK:       arith.cmpf ogt
// CHECK:       arith.addf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:  %{{.*}} = arith.bitcast %{{.*}} : f32 to i32
// CHECK-NOT:   arith.fptosi
// CHECK:       func.return
// CHECK-LABEL: func.func @main_{{[0-9]+}}_quantize
// CHECK:       tloop.for %d0 = 0 to 3 {
// CHECK-NEXT:  tloop.for %d1 = 0 to 1517 {
// CHECK:       arith.bitcast
func.func @main(%x: tensor<1x3x64x64xf32>, %p: tensor<1x3x37x41xf32>) -> (tensor<1x3x64x64xui8>, tensor<1x3x37x41xi8>) {
  %y = graph.quantize %x {scale = array<f32: 0.0187>, zero_point = array<i64: 114>, dtype = ui8} : (tensor<1x3x64x64xf32>) -> tensor<1x3x64x64xui8>
  %q = graph.quantize %p {scale = array<f32: 0.5>, zero_point = array<i64: -3>, dtype = i8} : (tensor<1x3x37x41xf32>) -> tensor<1x3x37x41xi8>
  func.return %y, %q : tensor<1x3x64x64xui8>, tensor<1x3x37x41xi8>
}
