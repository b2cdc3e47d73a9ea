// Narrow element types are storage-only below the graph dialect: lower-to-loops
// gives f8/f4/i4/i2 tensors i8 memrefs and bf16 tensors i16 memrefs, and the
// cast kernel converts with integer bit manipulation (no calls, no tables),
// which lower-to-llvm turns into plain llvm integer ops on i8/i16 loads/stores.
// RUN: dlc-opt %s -p lower-to-loops | filecheck %s --check-prefix=LOOPS
// RUN: dlc-opt %s -p lower-to-loops,lower-to-llvm | filecheck %s --check-prefix=LLVM

func.func @main(%x: tensor<7xf32>, %q: tensor<7xi4>, %b: tensor<7xbf16>) -> (tensor<7xf8E4M3FN>, tensor<7xf32>, tensor<7xf32>) {
  %0 = graph.cast %x {to = f8E4M3FN} : (tensor<7xf32>) -> tensor<7xf8E4M3FN>
  %1 = graph.cast %q {to = f32} : (tensor<7xi4>) -> tensor<7xf32>
  %2 = graph.cast %b {to = f32} : (tensor<7xbf16>) -> tensor<7xf32>
  func.return %0, %1, %2 : tensor<7xf8E4M3FN>, tensor<7xf32>, tensor<7xf32>
}

// f32 -> f8E4M3FN: sign, re-biased exponent with round-to-nearest-even,
// subnormals via +2^23, saturation to 0x7E (126), NaN -> 0x7F (127)
// LOOPS-LABEL: func.func @main_0_cast(%in0: memref<7xf32>, %out: memref<7xi8>)
// LOOPS:         %[[BITS:.*]] = arith.bitcast %{{.*}} : f32 to i32
// LOOPS:         arith.addf %{{.*}}, %{{.*}} : f32
// LOOPS:         arith.minui %{{.*}}, %{{.*}} : i32
// LOOPS:         %[[CODE:.*]] = arith.trunci %{{.*}} : i32 to i8
// LOOPS-NEXT:    memref.store %[[CODE]], %out[%d0] : memref<7xi8>
// LOOPS-NOT:     func.call
// i4 in the low bits of an i8: sign-extend from bit 3
// LOOPS-LABEL: func.func @main_1_cast(%in0: memref<7xi8>, %out: memref<7xf32>)
// LOOPS:         %[[C28:.*]] = arith.constant 28 : i32
// LOOPS:         %[[B:.*]] = memref.load %in0[%d0] : memref<7xi8>
// LOOPS-NEXT:    %[[W:.*]] = arith.extui %[[B]] : i8 to i32
// LOOPS-NEXT:    %[[UP:.*]] = arith.shli %[[W]], %[[C28]] : i32
// LOOPS-NEXT:    %[[V:.*]] = arith.shrsi %[[UP]], %[[C28]] : i32
// LOOPS-NEXT:    arith.sitofp %[[V]] : i32 to f32
// bf16 is the top half of an f32
// LOOPS-LABEL: func.func @main_2_cast(%in0: memref<7xi16>, %out: memref<7xf32>)
// LOOPS:         %[[H:.*]] = memref.load %in0[%d0] : memref<7xi16>
// LOOPS-NEXT:    %[[W:.*]] = arith.extui %[[H]] : i16 to i32
// LOOPS-NEXT:    %[[S:.*]] = arith.shli %[[W]], %{{.*}} : i32
// LOOPS-NEXT:    arith.bitcast %[[S]] : i32 to f32
// LOOPS-LABEL: func.func @main(%x: memref<7xf32>, %q: memref<7xi8>, %b: memref<7xi16>, %result0: memref<7xi8>, %result1: memref<7xf32>, %result2: memref<7xf32>)

// LLVM-LABEL: llvm.func @main_0_cast
// LLVM-NOT:     llvm.call
// LLVM:         llvm.bitcast %{{.*}} : f32 to i32
// LLVM:         %[[CODE:.*]] = llvm.trunc %{{.*}} : i32 to i8
// LLVM:         llvm.store %[[CODE]], %{{.*}} : i8, !llvm.ptr
// LLVM-LABEL: llvm.func @main_1_cast
// LLVM:         llvm.load %{{.*}} : !llvm.ptr -> i8
// LLVM:         llvm.ashr
// LLVM:         llvm.sitofp %{{.*}} : i32 to f32
// LLVM-LABEL: llvm.func @main_2_cast
// LLVM:         llvm.load %{{.*}} : !llvm.ptr -> i16
// LLVM-NOT:     llvm.call
// LLVM:         llvm.bitcast %{{.*}} : i32 to f32
