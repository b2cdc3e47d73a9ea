// alter-op-layout's errors: bad options, one line each, no traceback.
// RUN: not dlc-opt %s -p 'alter-op-layout{block=0}' 2>&1 | filecheck %s --check-prefix=ZERO
// RUN: not dlc-opt %s -p 'alter-op-layout{block=x}' 2>&1 | filecheck %s --check-prefix=TYPE
// RUN: not dlc-opt %s -p 'alter-op-layout{bogus=1}' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// ZERO:    dlc-opt: error: invalid options for pass 'alter-op-layout': block must be >= 1, got 0
// ZERO-NOT: Traceback
// TYPE:    dlc-opt: error: invalid options for pass 'alter-op-layout':
// TYPE-NOT: Traceback
// UNKNOWN: dlc-opt: error: pass 'alter-op-layout' has no option 'bogus' (its options: block)

func.func @f(%x: tensor<1x3x5x5xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x3x3xf32> {
  %c = graph.conv2d %x, %w : (tensor<1x3x5x5xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x3x3xf32>
  func.return %c : tensor<1x4x3x3xf32>
}
