package metal

import (
	"strconv"
	"strings"
)

// namer hands out C identifiers, unique within one scope (a kernel, or the
// functions of a launch description), derived from the IR's value names.
type namer struct {
	used map[string]bool
}

// reserved are the words a name must not take: Metal and C++ keywords,
// the types and functions the kernels use, the built-in parameters and
// the helpers' names.
var reserved = strings.Fields(`
	alignas alignof and asm auto bool break case catch char class const constexpr
	const_cast continue decltype default delete do double else enum explicit export
	extern false float for friend goto half if inline int long mutable namespace new
	noexcept not nullptr operator or private protected public register reinterpret_cast
	return short signed sizeof static static_assert static_cast struct switch template
	this thread_local throw true try typedef typeid typename union unsigned using
	virtual void volatile wchar_t while xor
	kernel vertex fragment device constant thread threadgroup threadgroup_imageblock ray_data object_data
	bfloat uchar ushort uint ulong size_t ptrdiff_t metal precise fast simd
	float2 float3 float4 half2 half4 bfloat2 bfloat4 char2 char4 uchar2 uchar4 short2 short4
	ushort2 ushort4 int2 int4 uint2 uint4 long2 long4 ulong2 ulong4 bool2 bool4
	INFINITY NAN mem_flags as_type min max abs
	simd_sum simd_max simd_min simd_any threadgroup_barrier
	simdgroup_matrix simdgroup_float8x8 simdgroup_half8x8 simdgroup_bfloat8x8 simdgroup_load simdgroup_store
	simdgroup_multiply simdgroup_multiply_accumulate make_filled_simdgroup_matrix
	gid lid simd_lane simd_id tg_size ngroups tid nthreads nthr worker chunk chunks instances
	l q sg sram partial main
`)

func newNamer(extra ...string) *namer {
	n := &namer{used: map[string]bool{}}
	for _, w := range reserved {
		n.used[w] = true
	}
	for _, w := range extra {
		n.used[w] = true
	}
	return n
}

// fresh returns base made a valid identifier, with a suffix _1, _2, ...
// if it is taken; names starting with tf_ or partial are the emitter's.
func (n *namer) fresh(base string) string {
	base = sanitize(base)
	if strings.HasPrefix(base, "tf_") || strings.HasPrefix(base, "partial") || strings.HasPrefix(base, "sram") ||
		strings.HasPrefix(base, "__") || macroLike(base) {
		// the emitter's names, the implementation's, and macros (HUGE_VALF)
		base = "v_" + base
	}
	name := base
	for i := 1; n.used[name]; i++ {
		name = base + "_" + strconv.Itoa(i)
	}
	n.used[name] = true
	return name
}

// sanitize keeps the letters, digits and underscores of s, never starts
// with a digit and is never empty.
func sanitize(s string) string {
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isIdentByte(c) {
			sb.WriteByte(c)
		} else {
			sb.WriteByte('_')
		}
	}
	out := sb.String()
	if out == "" || (out[0] >= '0' && out[0] <= '9') {
		out = "v" + out
	}
	return out
}

// macroLike reports whether a name is spelled like a C macro (INFINITY,
// HUGE_VALF, FLT_MAX): no lower-case letter, two characters at least.
func macroLike(s string) bool {
	if len(s) < 2 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'a' && c <= 'z' {
			return false
		}
	}
	return true
}
