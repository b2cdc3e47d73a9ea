// dlc-translate --to-llvm: LLVM IR text of loop-level (and graph-level) IR.
// Kernels take noalias pointers, host functions are exported C functions over
// plain pointers, loop kinds become llvm.loop metadata, weights external globals,
// and dlc_metadata holds the entry points as JSON.
// RUN: dlc-translate --to-llvm %s | filecheck %s
// RUN: dlc-translate --to-llvm %s -o %t.ll && filecheck %s < %t.ll

builtin.module {
  func.func @main_0_add(%x: memref<8xf32>, %w: memref<8xf32>, %y: memref<8xf32>) attributes {tloop.kernel} {
    tloop.for %i = 0 to 8 vectorized {
      %a = memref.load %x[%i] : memref<8xf32>
      %b = memref.load %w[%i] : memref<8xf32>
      %s = arith.addf %a, %b : f32
      memref.store %s, %y[%i] : memref<8xf32>
    }
    func.return
  }
  func.func @main(%x: memref<8xf32>, %y: memref<8xf32>) attributes {tloop.host, tloop.num_inputs = 1 : i64} {
    %w = tloop.weight "bias" : memref<8xf32>
    func.call @main_0_add(%x, %w, %y) : (memref<8xf32>, memref<8xf32>, memref<8xf32>) -> ()
    func.return
  }
}

// CHECK-DAG:   @"dlc_num_threads" = internal global i32 0
// CHECK-DAG:   @"[[W:__dlc_w[0-9]+_0]]" = external global [8 x float]
// CHECK:       define void @"main_0_add"(ptr noalias %{{.*}}, ptr noalias %{{.*}}, ptr noalias %{{.*}})
// CHECK:         fadd float
// CHECK:         br label %{{.*}}, !llvm.loop ![[LOOP:[0-9]+]]
// CHECK:       define i32 @"main"(ptr %{{.*}}, ptr %{{.*}})
// CHECK:         call ccc void @"main_0_add"(ptr %{{.*}}, [8 x float]* @"[[W]]", ptr %{{.*}})
// CHECK:       define void @"dlc_set_num_threads"(i32 %{{.*}})
// CHECK:       @"dlc_metadata" = constant [{{[0-9]+}} x i8] c"{\22format\22: \22dlc-2\22, \22default_entry\22: \22main\22, \22entries\22: {\22main\22: {\22inputs\22: [{\22name\22: \22x\22, \22shape\22: [8], \22dtype\22: \22float32\22}], \22outputs\22: [{\22name\22: \22y\22, \22shape\22: [8], \22dtype\22: \22float32\22}]}}}\00"
// CHECK:       ![[WIDTH:[0-9]+]] = !{ !"llvm.loop.vectorize.width", i32 8 }
// CHECK:       ![[LOOP]] = !{ ![[LOOP]], ![[WIDTH]] }
