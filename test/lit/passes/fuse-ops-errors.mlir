// fuse-ops's errors: a bad option; a group marked by hand that cannot be one kernel
// (lower-to-loops checks each group and names the op).
// RUN: not dlc-opt %s -p 'fuse-ops{dense=maybe}' 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: not dlc-opt %s -p 'fuse-ops{bogus=1}' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not dlc-opt %s -p lower-to-loops 2>&1 | filecheck %s --check-prefix=GROUP
// OPTION:  dlc-opt: error: invalid options for pass 'fuse-ops':
// UNKNOWN: dlc-opt: error: pass 'fuse-ops' has no option 'bogus' (its options: dense)
// GROUP-NOT: Traceback

func.func @shared(%x: tensor<4x3xf32>, %b: tensor<3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %a = graph.add %x, %b {dlc.group = 0 : i64} : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %z = graph.relu %a {dlc.group = 0 : i64} : (tensor<4x3xf32>) -> tensor<4x3xf32>
// GROUP: fuse-ops-errors.mlir:[[# @LINE - 1]]:3: error: pass 'lower-to-loops' failed: fused group: the result of 'graph.add' is used outside its group
  func.return %z, %a : tensor<4x3xf32>, tensor<4x3xf32>
}
