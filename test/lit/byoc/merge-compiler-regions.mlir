// merge-compiler-regions: connected ops of one target form one region; a merge that
// would make a cycle through a dlc op (add -> softmax -> mul, and add -> mul) is split.
// RUN: dlc-opt %s -p 'annotate-target{targets=c},merge-compiler-regions' | filecheck %s
// RUN: dlc-opt %s -p 'annotate-target{targets=c},merge-compiler-regions' | dlc-opt | filecheck %s

// CHECK-LABEL: func.func @chain
// CHECK: graph.add {{.*}}dlc.region = 0
// CHECK: graph.relu {{.*}}dlc.region = 0
// CHECK: graph.mul {{.*}}dlc.region = 0
func.func @chain(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = graph.add %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %r = graph.relu %a : (tensor<4xf32>) -> tensor<4xf32>
  %m = graph.mul %r, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %m : tensor<4xf32>
}

// CHECK-LABEL: func.func @cycle
// CHECK: graph.add {{.*}}dlc.region = 0
// CHECK: graph.softmax
// CHECK-NOT: dlc.region
// CHECK-SAME: {{$}}
// CHECK: graph.mul {{.*}}dlc.region = 1
func.func @cycle(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = graph.add %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s = graph.softmax %a {axis = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  %m = graph.mul %a, %s : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %m : tensor<4xf32>
}
