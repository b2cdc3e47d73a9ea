// Each tloop-* pass refuses what it cannot prove safe: one line naming the kernel and
// the loop, pointing at the loop, exit status 1, no traceback.
// RUN: not dlc-opt %s -p 'tloop-split{kernel="mm" loop="q" factor=2}' 2>&1 | filecheck %s --check-prefix=NOLOOP
// RUN: not dlc-opt %s -p 'tloop-split{kernel="nope" loop="i" factor=2}' 2>&1 | filecheck %s --check-prefix=NOKERNEL
// RUN: not dlc-opt %s -p 'tloop-split{kernel="mm" loop="i" factor=0}' 2>&1 | filecheck %s --check-prefix=FACTOR
// RUN: not dlc-opt %s -p 'tloop-reorder{kernel="mm" order=k,j}' 2>&1 | filecheck %s --check-prefix=PERFECT
// RUN: not dlc-opt %s -p 'tloop-reorder{kernel="conv" order=kw,kh}' 2>&1 | filecheck %s --check-prefix=REDUCTION
// RUN: not dlc-opt %s -p 'tloop-tile{kernel="conv" outer="kh" inner="kw" outer-factor=2 inner-factor=2}' 2>&1 | filecheck %s --check-prefix=TILE
// RUN: not dlc-opt %s -p 'tloop-fuse{kernel="mm" outer="j" inner="i"}' 2>&1 | filecheck %s --check-prefix=FUSE
// RUN: not dlc-opt %s -p 'tloop-fuse-siblings{kernel="shifted" first="i" second="j"}' 2>&1 | filecheck %s --check-prefix=SIBLINGS
// RUN: not dlc-opt %s -p 'tloop-vectorize{kernel="mm" loop="k"}' 2>&1 | filecheck %s --check-prefix=STRIDE
// RUN: not dlc-opt %s -p 'tloop-parallel{kernel="mm" loop="k"}' 2>&1 | filecheck %s --check-prefix=OUTERMOST
// RUN: not dlc-opt %s -p 'tloop-reorder{kernel="conv" order=kh,f},tloop-parallel{kernel="conv" loop="kh"}' 2>&1 | filecheck %s --check-prefix=RACE
// RUN: not dlc-opt %s -p 'tloop-unroll{kernel="mm" loop="i" expand=true}' 2>&1 | filecheck %s --check-prefix=EXPAND
// RUN: not dlc-opt %s -p 'tloop-cache-read{kernel="mm" buffer="c" loop="j"}' 2>&1 | filecheck %s --check-prefix=CACHE
// RUN: not dlc-opt %s -p 'tloop-cache-write{kernel="mm" buffer="a" loop="j"}' 2>&1 | filecheck %s --check-prefix=CACHEW
// RUN: not dlc-opt %s -p 'tloop-inline{kernel="mm"}' 2>&1 | filecheck %s --check-prefix=INLINE
// RUN: not dlc-opt %s -p 'tloop-split{kernel="mm" loop="i"}' 2>&1 | filecheck %s --check-prefix=OPTION

// NOLOOP:    errors.mlir{{.*}}: error: pass 'tloop-split' failed: @mm: no loop named 'q' (loops: 'i', 'j', 'k')
// NOKERNEL:  error: pass 'tloop-split' failed: no kernel named @nope (kernels: @mm, @conv, @shifted)
// FACTOR:    errors.mlir:[[# @LINE + 19]]:3: error: pass 'tloop-split' failed: @mm, loop 'i': split factor must be a positive integer, got 0
// FACTOR-NEXT: tloop.for %i = 0 to 7 {
// FACTOR-NEXT: ^^^^^^^^^
// PERFECT:   errors.mlir:[[# @LINE + 17]]:5: error: pass 'tloop-reorder' failed: @mm, loop 'j': not a perfect nest: 'memref.store' sits between loops 'j' and 'k'
// REDUCTION: error: pass 'tloop-reorder' failed: @conv, loop 'kh': cannot reorder 'kw', 'kh': it would change the order of the reduction loops 'kh', 'kw' updating %out (floating-point accumulation order would change)
// TILE:      error: pass 'tloop-tile' failed: @conv, loop 'kh': cannot tile: loops 'kh' and 'kw' are both reduction loops of %out (accumulation order would change)
// FUSE:      error: pass 'tloop-fuse' failed: @mm, loop 'i': is not nested inside loop 'j'
// SIBLINGS:  error: pass 'tloop-fuse-siblings' failed: @shifted, loop 'i': cannot fuse with 'j': %t is written by one loop and used by the other at elements of other iterations
// STRIDE:    error: pass 'tloop-vectorize' failed: @mm, loop 'k': cannot be vectorized: the access to %b is not stride-1 along it
// OUTERMOST: error: pass 'tloop-parallel' failed: @mm, loop 'k': only an outermost loop can be parallel (it is inside loop 'i')
// RACE:      error: pass 'tloop-parallel' failed: @conv, loop 'kh': cannot be parallel: its iterations update the same elements of %out (a reduction over it)
// EXPAND:    error: pass 'tloop-unroll' failed: @mm, loop 'i': cannot expand: its body contains loop 'j'
// CACHE:     error: pass 'tloop-cache-read' failed: @mm, loop 'j': cache_read: %c is written inside the loop (use cache_write)
// CACHEW:    error: pass 'tloop-cache-write' failed: @mm, loop 'j': cache_write: %a is not written inside the loop (use cache_read)
// INLINE:    error: pass 'tloop-inline' failed: inline: @mm is not an elementwise kernel (one perfect loop nest over its output's shape)
// OPTION:    dlc-opt: error: invalid options for pass 'tloop-split': tloop-split requires argument "factor"
// CHECK-NOT: Traceback

func.func @mm(%a: memref<7x5xf32>, %b: memref<5x3xf32>, %c: memref<7x3xf32>) attributes {tloop.kernel} {
  tloop.for %i = 0 to 7 {
    tloop.for %j = 0 to 3 {
      %z = arith.constant 0.0 : f32
      memref.store %z, %c[%i, %j] : memref<7x3xf32>
      tloop.for %k = 0 to 5 {
        %x = memref.load %a[%i, %k] : memref<7x5xf32>
        %y = memref.load %b[%k, %j] : memref<5x3xf32>
        %acc = memref.load %c[%i, %j] : memref<7x3xf32>
        %m = arith.mulf %x, %y : f32
        %s = arith.addf %acc, %m : f32
        memref.store %s, %c[%i, %j] : memref<7x3xf32>
      }
    }
  }
  func.return
}

func.func @conv(%x: memref<2x5x5xf32>, %w: memref<3x2x2x2xf32>, %out: memref<3x4x4xf32>) attributes {tloop.kernel} {
  tloop.for %f = 0 to 3 {
    tloop.for %h = 0 to 4 {
      tloop.for %q = 0 to 4 {
        tloop.for %kh = 0 to 2 {
          tloop.for %kw = 0 to 2 {
            tloop.for %c = 0 to 2 {
              %hi = arith.addi %h, %kh : index
              %wi = arith.addi %q, %kw : index
              %v = memref.load %x[%c, %hi, %wi] : memref<2x5x5xf32>
              %k = memref.load %w[%f, %c, %kh, %kw] : memref<3x2x2x2xf32>
              %acc = memref.load %out[%f, %h, %q] : memref<3x4x4xf32>
              %p = arith.mulf %v, %k : f32
              %s = arith.addf %acc, %p : f32
              memref.store %s, %out[%f, %h, %q] : memref<3x4x4xf32>
            }
          }
        }
      }
    }
  }
  func.return
}

func.func @shifted(%x: memref<13xf32>, %out: memref<12xf32>) attributes {tloop.kernel} {
  %t = memref.alloca() : memref<13xf32>
  tloop.for %i = 0 to 12 {
    %v = memref.load %x[%i] : memref<13xf32>
    memref.store %v, %t[%i] : memref<13xf32>
  }
  tloop.for %j = 0 to 12 {
    %one = arith.constant 1 : index
    %j1 = arith.addi %j, %one : index
    %v = memref.load %t[%j1] : memref<13xf32>
    memref.store %v, %out[%j] : memref<12xf32>
  }
  func.return
}
