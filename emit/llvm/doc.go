// Package llvmemit translates lowered TensorForge modules (the loop
// dialect) into LLVM 14 IR for the host CPU, built with
// github.com/llir/llvm's ir package. A kernel
//
//	loop.kernel {kind = "row", num_inputs = 1, num_outputs = 1, sym_name = "f_k0"} {
//	^bb0(%x: memref<?x64xf32, dram>, %y: memref<?xf32, dram>, %x_d0: index, %y_d0: index):
//	  loop.parallel %c0, %y_d0, %c1 {dist = "grid"} { ... }
//	  loop.return
//	}
//
// becomes
//
//	define void @f_k0(float* %x, float* %y, i64 %x_d0, i64 %y_d0, i64 %row_begin, i64 %row_end)
//	define i64 @f_k0.grid(float* %x, float* %y, i64 %x_d0, i64 %y_d0)
//	define void @f_k0.task(i8* %ctx, i64 %begin, i64 %end)
//
// (the grid iterations [row_begin, row_end), their number, and the
// callback of the runtime's thread pool), and each function of loop ops
// `void @f(T* buffers..., i64 extents...)`, which launches its kernels
// through `tf_parallel_for`. Vector values are LLVM vectors (<8 x float>);
// f16, bf16 and f8 live in integer registers and are converted with the
// exact rounding of ir/numeric; every op follows the reference
// interpreter, as docs/cpu-backend.md details.
//
// Emit returns the module, EmitText its text; the same input gives the
// same text. Package emit/cpurt builds and runs the result.
package llvmemit
