// fold-constant's errors: bad options, an op its reference cannot evaluate.
// RUN: not dlc-opt %s -p 'fold-constant{inline-size=3}' 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: not dlc-opt %s -p 'fold-constant{size-limit=-1}' 2>&1 | filecheck %s --check-prefix=NEGATIVE
// RUN: not dlc-opt %s -p fold-constant 2>&1 | filecheck %s --check-prefix=EVAL
// RUN: dlc-opt %s -p fold-constant --verify-diagnostics
// OPTION:   dlc-opt: error: pass 'fold-constant' has no option 'inline-size' (its options: size-limit, inline-limit)
// NEGATIVE: dlc-opt: error: invalid options for pass 'fold-constant': size-limit must be >= 0, got -1
// EVAL-NOT: Traceback

func.func @out_of_bounds() -> tensor<2xf32> {
  %d = graph.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %i = graph.constant dense<[0, 7]> : tensor<2xi64>
  // expected-error @+1 {{pass 'fold-constant' failed: cannot evaluate 'graph.gather' %g (op #2 of @out_of_bounds): index 7 is out of bounds}}
  %g = graph.gather %d, %i {axis = 0 : i64} : (tensor<3xf32>, tensor<2xi64>) -> tensor<2xf32>
// EVAL: fold-constant-errors.mlir:[[# @LINE - 1]]:3: error: pass 'fold-constant' failed: cannot evaluate 'graph.gather' %g (op #2 of @out_of_bounds): index 7 is out of bounds
  func.return %g : tensor<2xf32>
}
