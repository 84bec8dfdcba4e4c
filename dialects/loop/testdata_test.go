package loop_test

// program is a lowered program using every op of the dialect.
const program = `module {
  func.func @f(%x: memref<?x64xbf16, dram>, %w: memref<64xbf16, dram>, %y: memref<?x64xbf16, dram>, %s: memref<?xf32, dram>) attributes {num_results = 2} {
    %n = loop.dim %x {axis = 0} : (memref<?x64xbf16, dram>) -> index
    %c2 = loop.const {value = 2} : index
    %m = loop.muli %n, %c2 : index
    %t = loop.alloc_dram %m {offset = 0, size = 512} : (index) -> memref<?xf32, dram>
    %u = loop.alloc_dram {offset = 256, size = 256} : memref<8x8xf32, dram>
    loop.launch %x, %w, %y, %s, %n, %n, %n {kernel = "f_k0"} : (memref<?x64xbf16, dram>, memref<64xbf16, dram>, memref<?x64xbf16, dram>, memref<?xf32, dram>, index, index, index) -> ()
    %tk = loop.alloc_dram {zeroed = true} : memref<1xi32, dram>
    %gs = loop.alloc_dram %n {zeroed = true} : (index) -> memref<?x2xi32, dram>
    loop.launch %s, %tk, %gs, %n, %n {kernel = "f_k1"} : (memref<?xf32, dram>, memref<1xi32, dram>, memref<?x2xi32, dram>, index, index) -> ()
    return
  }
  loop.kernel {kind = "row", num_inputs = 2, num_outputs = 2, row_len = 64, schedule = "one-pass", sram_bytes = 256, sym_name = "f_k0", vector_width = 8} {
  ^bb0(%x: memref<?x64xbf16, dram>, %w: memref<64xbf16, dram>, %y: memref<?x64xbf16, dram>, %s: memref<?xf32, dram>, %x_d0: index, %y_d0: index, %s_d0: index):
    %c0 = loop.const {value = 0} : index
    %c1 = loop.const {value = 1} : index
    %c8 = loop.const {value = 8} : index
    %c64 = loop.const {value = 64} : index
    %zero = loop.const {value = 0.0} : vector<8xf32>
    %ninf = loop.const {value = -inf} : vector<8xf32>
    %half = loop.const {value = 0.5} : f32
    %three = loop.const {value = 3} : i32
    loop.parallel %c0, %x_d0, %c1 {dist = "grid"} {
    ^bb1(%r: index):
      %row = loop.alloc {offset = 0} : memref<64xf32, sram>
      %acc:2 = loop.for %c0, %c64, %c8, %zero, %ninf {combine = ["add", "max"], dist = "threads"} {
      ^bb2(%i: index, %a: vector<8xf32>, %b: vector<8xf32>):
        %v = loop.load %x, %r, %i : (memref<?x64xbf16, dram>, index, index) -> vector<8xbf16>
        %f = loop.cast %v : (vector<8xbf16>) -> vector<8xf32>
        loop.store %f, %row, %i : (vector<8xf32>, memref<64xf32, sram>, index) -> ()
        %sq = loop.mul %f, %f : vector<8xf32>
        %a2 = loop.add %a, %sq : vector<8xf32>
        %b2 = loop.max %b, %f : vector<8xf32>
        loop.yield %a2, %b2 : vector<8xf32>, vector<8xf32>
      } : (index, index, index, vector<8xf32>, vector<8xf32>) -> (vector<8xf32>, vector<8xf32>)
      %ss = loop.reduce %acc#0 {kind = "add"} : (vector<8xf32>) -> f32
      %mx = loop.reduce %acc#1 {kind = "max"} : (vector<8xf32>) -> f32
      %sc = loop.fma %ss, %half, %mx : f32
      loop.store %sc, %s, %r : (f32, memref<?xf32, dram>, index) -> ()
      %k = loop.cast %three : (i32) -> f32
      %k2 = loop.add %sc, %k : f32
      loop.for %c0, %c64, %c8 {dist = "threads"} {
      ^bb3(%i: index):
        %g = loop.load %row, %i : (memref<64xf32, sram>, index) -> vector<8xf32>
        %wv = loop.load %w, %i : (memref<64xbf16, dram>, index) -> vector<8xbf16>
        %wf = loop.cast %wv : (vector<8xbf16>) -> vector<8xf32>
        %kb = loop.broadcast %k2 : (f32) -> vector<8xf32>
        %p = loop.mul %g, %kb : vector<8xf32>
        %q = loop.silu %p : vector<8xf32>
        %e = loop.gelu %q {approximate = "tanh"} : vector<8xf32>
        %lt = loop.cmp %e, %wf {predicate = "lt"} : (vector<8xf32>, vector<8xf32>) -> vector<8xi1>
        %o = loop.select %lt, %e, %wf : (vector<8xi1>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
        %ob = loop.cast %o : (vector<8xf32>) -> vector<8xbf16>
        %tr:8 = loop.transpose %o, %p, %q, %e, %o, %p, %q, %e : vector<8xf32>
        loop.store %ob, %y, %r, %i : (vector<8xbf16>, memref<?x64xbf16, dram>, index, index) -> ()
        loop.yield
      } : index
      %j = loop.addi %r, %c1 : index
      %j2 = loop.subi %j, %c1 : index
      %j3 = loop.divi %j2, %c8 : index
      %j4 = loop.remi %j3, %c8 : index
      %j5 = loop.mini %j4, %c64 : index
      %j6 = loop.clamp_index %three, %c64 : (i32, index) -> index
      loop.yield
    } : index
    loop.return
  }
  loop.kernel {kind = "row", num_inputs = 0, num_outputs = 3, row_len = 2, schedule = "resident", sym_name = "f_k1"} {
  ^bb0(%s: memref<?xf32, dram>, %tk: memref<1xi32, dram>, %gs: memref<?x2xi32, dram>, %s_d0: index, %gs_d0: index):
    %c0 = loop.const {value = 0} : index
    %c1 = loop.const {value = 1} : index
    %c2 = loop.const {value = 2} : index
    %n = loop.muli %gs_d0, %c2 : index
    loop.parallel %c0, %n, %c1 {dist = "grid"} {
    ^bb1(%r: index):
      %t = loop.ticket %tk, %n : (memref<1xi32, dram>, index) -> index
      %g = loop.divi %t, %c2 : index
      loop.group_sync %gs, %g, %c2 : (memref<?x2xi32, dram>, index, index) -> ()
      loop.yield
    } : index
    loop.return
  }
}
`
