// dlc-translate --to-llvm on graph-level IR runs the whole pipeline first
// (fold-constant, legalize, lower-to-loops, schedules, lower-to-llvm).
// RUN: dlc-translate --to-llvm %s | filecheck %s

func.func @main(%x: tensor<3x5xf32>, %y: tensor<5xf32>) -> tensor<3x5xf32> {
  %a = graph.add %x, %y : (tensor<3x5xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  %r = graph.relu %a : (tensor<3x5xf32>) -> tensor<3x5xf32>
  func.return %r : tensor<3x5xf32>
}

// CHECK: define void @"main_{{.*}}"(ptr noalias
// CHECK: define i32 @"main"(ptr %{{.*}}, ptr %{{.*}}, ptr %{{.*}})
// the C runtime's packed wrapper: args[0..2] loaded, the entry called (not inlined)
// CHECK: define i32 @"main__packed"(ptr %[[ARGS:.*]])
// CHECK-COUNT-3: load ptr, ptr
// CHECK: call i32 @"main"(ptr %{{.*}}, ptr %{{.*}}, ptr %{{.*}}) noinline
// CHECK: @"dlc_metadata" = constant {{.*}}\22inputs\22: [{\22name\22: \22x\22, \22shape\22: [3, 5]
