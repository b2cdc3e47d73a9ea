// RUN: %python -m dlc.backends.cuda --to-cuda %s | filecheck %s
// Direct conv2d (generic schedule): output elements over a grid-stride loop, the
// reduction over (c, kh, kw) per thread accumulating in a register; zero padding guarded.

builtin.module {
  func.func @main_0_conv2d(%x: memref<1x3x11x13xf32>, %w: memref<5x3x3x3xf32>, %y: memref<1x5x11x13xf32>) attributes {tloop.kernel, tloop.source = "graph.conv2d"} {
    %zero = arith.constant 0.0 : f32
    tloop.for %n = 0 to 1 parallel {
      tloop.for %k = 0 to 5 parallel {
        tloop.for %h = 0 to 11 parallel {
          tloop.for %v = 0 to 13 parallel {
            memref.store %zero, %y[%n, %k, %h, %v] : memref<1x5x11x13xf32>
            tloop.for %c = 0 to 3 {
              tloop.for %r = 0 to 3 {
                tloop.for %s = 0 to 3 {
                  %one = arith.constant 1 : index
                  %hr = arith.addi %h, %r : index
                  %hi = arith.subi %hr, %one : index
                  %vs = arith.addi %v, %s : index
                  %wi = arith.subi %vs, %one : index
                  %c11 = arith.constant 11 : index
                  %c13 = arith.constant 13 : index
                  %okh = arith.cmpi ult, %hi, %c11 : index
                  %okw = arith.cmpi ult, %wi, %c13 : index
                  %ok = arith.andi %okh, %okw : i1
                  %in = scf.if %ok -> (f32) {
                    %l = memref.load %x[%n, %c, %hi, %wi] : memref<1x3x11x13xf32>
                    scf.yield %l : f32
                  } else {
                    scf.yield %zero : f32
                  }
                  %wv = memref.load %w[%k, %c, %r, %s] : memref<5x3x3x3xf32>
                  %p = arith.mulf %in, %wv : f32
                  %acc = memref.load %y[%n, %k, %h, %v] : memref<1x5x11x13xf32>
                  %sum = arith.addf %acc, %p : f32
                  memref.store %sum, %y[%n, %k, %h, %v] : memref<1x5x11x13xf32>
                }
              }
            }
          }
        }
      }
    }
    func.return
  }
  func.func @main(%x: memref<1x3x11x13xf32>, %y: memref<1x5x11x13xf32>) attributes {tloop.host, tloop.num_inputs = 1 : i64} {
    %w = tloop.weight "conv.weight" : memref<5x3x3x3xf32>
    func.call @main_0_conv2d(%x, %w, %y) : (memref<1x3x11x13xf32>, memref<5x3x3x3xf32>, memref<1x5x11x13xf32>) -> ()
    func.return
  }
}

// CHECK: // @main_0_conv2d: graph.conv2d
// CHECK-NEXT: // launch: grid (3, 1, 1), block (256, 1, 1)
// CHECK: float acc[1];
// CHECK: for (int64_t c = 0; c < 3; c++) {
// CHECK: acc[0] =
// CHECK: y[n * 715 + k * 143 + h * 13 + v] =
