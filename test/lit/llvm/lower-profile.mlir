// The profile build: lower-to-loops{profile=true} stamps each kernel with its graph
// op's cost (tloop.flops, tloop.bytes; lowering/cost.py), and lower-to-llvm{profile=true}
// brackets every kernel call of the host, and the host itself, with dlc_profile_now
// timestamps recorded by dlc_profile_record (lowering/to_llvm/profile.py).
// RUN: dlc-opt %s -p 'lower-to-loops{profile=true}' | filecheck %s --check-prefix=COST
// RUN: dlc-opt %s -p 'lower-to-loops{profile=true},lower-to-llvm{profile=true}' | filecheck %s
// RUN: dlc-opt %s -p 'lower-to-loops,lower-to-llvm' | filecheck %s --check-prefix=PLAIN

func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x3xf32>) -> tensor<4x3xf32> {
  %m = graph.matmul %a, %b : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %r = graph.relu %m : (tensor<4x3xf32>) -> tensor<4x3xf32>
  func.return %r : tensor<4x3xf32>
}

// 2*4*3*8 FLOPs; (32 + 24 + 12) floats of 4 bytes
// COST: func.func @main_0_matmul({{.*}}) attributes {{{.*}}tloop.flops = 192 : i64, tloop.bytes = 272 : i64}
// COST: func.func @main_1_relu({{.*}}) attributes {{{.*}}tloop.flops = 12 : i64, tloop.bytes = 96 : i64}

// CHECK:       builtin.module attributes {dlc.profile_sites = "[{\22kind\22: \22kernel\22, \22kernel\22: \22main_0_matmul\22, \22source\22: \22graph.matmul\22, \22form\22: \22matmul\22
// CHECK-LABEL: llvm.func @main(
// CHECK-DAG:     %[[S0:.*]] = llvm.mlir.constant(0) : i64
// CHECK-DAG:     %[[S1:.*]] = llvm.mlir.constant(1) : i64
// CHECK-DAG:     %[[S2:.*]] = llvm.mlir.constant(2) : i64
// CHECK-DAG:     %[[OK:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK:         %[[T0:.*]] = llvm.call @dlc_profile_now() : () -> i64
// CHECK:         %[[K0:.*]] = llvm.call @dlc_profile_now() : () -> i64
// CHECK-NEXT:    llvm.call @main_0_matmul(
// CHECK-NEXT:    %[[K1:.*]] = llvm.call @dlc_profile_now() : () -> i64
// CHECK-NEXT:    llvm.call @dlc_profile_record(%[[S0]], %[[K0]], %[[K1]])
// CHECK-NEXT:    %[[K2:.*]] = llvm.call @dlc_profile_now() : () -> i64
// CHECK-NEXT:    llvm.call @main_1_relu(
// CHECK-NEXT:    %[[K3:.*]] = llvm.call @dlc_profile_now() : () -> i64
// CHECK-NEXT:    llvm.call @dlc_profile_record(%[[S1]], %[[K2]], %[[K3]])
// CHECK:         %[[T1:.*]] = llvm.call @dlc_profile_now() : () -> i64
// CHECK-NEXT:    llvm.call @dlc_profile_record(%[[S2]], %[[T0]], %[[T1]])
// CHECK-NEXT:    llvm.return %[[OK]] : i32
// CHECK:       llvm.func @clock_gettime(i32, !llvm.ptr) -> i32
// CHECK:       llvm.func internal @dlc_profile_now() -> i64
// CHECK:         llvm.call @clock_gettime(
// CHECK:       llvm.func internal @dlc_profile_record(
// CHECK:       llvm.func @dlc_profile_begin(
// CHECK:       llvm.func @dlc_profile_end() -> i64

// PLAIN-NOT: dlc_profile
// PLAIN-NOT: tloop.flops
