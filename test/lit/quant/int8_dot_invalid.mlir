// lower-to-llvm refuses a loop marked dlc.int8_dot that is not the u8 x s8 dot form
// (lowering/to_llvm/int8_dot.py), for either form, and a form it does not know: a
// schedule bug, never silently slower code.
// RUN: not dlc-opt --split-input-file -p lower-to-llvm %s 2>&1 | filecheck %s

// CHECK: 'tloop.for' marked dlc.int8_dot: the lane loop must run 0..16 step 1 (in @k)
func.func @k(%acc: memref<8xi32>) attributes {tloop.kernel} {
  tloop.for %nl = 0 to 8 {
    tloop.for %j = 0 to 4 {
      %v = memref.load %acc[%nl] : memref<8xi32>
      memref.store %v, %acc[%nl] : memref<8xi32>
    }
  } {dlc.int8_dot = "vpdpbusd"}
  func.return
}

// -----

// CHECK: 'tloop.for' marked dlc.int8_dot: the body must be acc += zext(a) * sext(w): 3 loads and 1 store in the inner loop (in @p)
func.func @p(%acc: memref<16xi32>) attributes {tloop.kernel} {
  tloop.for %nl = 0 to 16 {
    tloop.for %j = 0 to 4 {
      %v = memref.load %acc[%nl] : memref<16xi32>
      memref.store %v, %acc[%nl] : memref<16xi32>
    }
  } {dlc.int8_dot = "pmaddwd"}
  func.return
}

// -----

// CHECK: 'tloop.for': unknown dlc.int8_dot form "vpdpbssd" (known: "vpdpbusd", "pmaddubsw", "pmaddwd") (in @u)
func.func @u(%acc: memref<16xi32>) attributes {tloop.kernel} {
  tloop.for %nl = 0 to 16 {
    tloop.for %j = 0 to 4 {
      %v = memref.load %acc[%nl] : memref<16xi32>
      memref.store %v, %acc[%nl] : memref<16xi32>
    }
  } {dlc.int8_dot = "vpdpbssd"}
  func.return
}
