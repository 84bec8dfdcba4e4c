package tt

import "strings"

// Names in the generated C++. A buffer parameter p of a kernel declares
// p_addr, p_args and p itself (its TensorAccessor), and its circular
// buffers are cb_p and cb_p_src; intermediates get cb_<name>. So that no
// value name collides with a C++ keyword, with the tt-metal API the
// kernels call, or with a name derived from another value, a parameter
// name
//
//   - that starts with a prefix of the API or of the emitter's own names
//     (cb_, noc_, get_, tile_, ...) or is spelled like a macro (INFINITY)
//     gets v_ in front;
//   - that is a keyword or an API word, or ends like a derived name
//     (_addr, _args, _src) or an API call (_tile, _init, ...), gets _
//     appended.
//
// Ordinary names (x, w, gate, scores) are kept as they are.

// cppReserved are C++ keywords and alternative tokens, the standard
// names the kernels use and the words of the tt-metal API and of its
// emulation that are not caught by a prefix or a suffix.
var cppReserved = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`
		alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t
		char32_t class compl concept const consteval constexpr constinit const_cast continue co_await
		co_return co_yield decltype default delete do double dynamic_cast else enum explicit export
		extern false float for friend goto if inline int long mutable namespace new noexcept not not_eq
		nullptr operator or or_eq private protected public register reinterpret_cast requires return
		short signed sizeof static static_assert static_cast struct switch template this thread_local
		throw true try typedef typeid typename union unsigned using virtual void volatile wchar_t while
		xor xor_eq final override import module
		std size_t ptrdiff_t int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t uintptr_t
		NULL assert main errno stdin stdout stderr printf abort exit memcpy memset
		tt ttemu ckernel MAIN ALWI TensorAccessor TensorAccessorArgs CBIndex DataFormat ReduceDim
		PoolType BroadcastType Float32 Float16 Float16_b Bfp8_b UInt8 Int8 UInt32 Int32 SUM MAX MIN AVG
		ROW COL SCALAR REDUCE_ROW REDUCE_COL REDUCE_SCALAR constant device thread threadgroup
		cb unit unit_start unit_count num_units Ct ct rb
		eltwise_binary eltwise_unary eltwise_binary_sfpu bcast binop_with_scalar binary_max_min
		isinf_isnan where typecast rounding exp log log1p sqrt rsqrt recip negative sigmoid silu tanh
		gelu relu abs fill transpose reduce pack common`) {
		cppReserved[w] = true
	}
}

// reservedPrefixes start the API's names and the emitter's own.
var reservedPrefixes = []string{"cb_", "noc_", "get_", "tile_", "pack_", "reduce_", "reconfig_", "copy_",
	"fill_", "unary_", "binary_", "binop_", "transpose_", "typecast_", "compute_", "kernel_", "tt_", "ttemu",
	"next_", "dataflow", "experimental", "zero_tile", "TTEMU", "TF_", "tf_", "__"}

// reservedSuffixes end derived names and the API's calls.
var reservedSuffixes = []string{"_addr", "_args", "_src", "_tile", "_init", "_short", "_uninit", "_t"}

// paramIdent turns a value name into the name of a kernel parameter: a C++
// identifier (see cIdent) that is none of the reserved words and none of
// used, which it joins.
func paramIdent(s, def string, used map[string]bool) string {
	name := cIdent(s, def)
	for {
		if hasAnyPrefix(name, reservedPrefixes) || len(name) > 1 && name[0] == '_' && name[1] >= 'A' && name[1] <= 'Z' || macroLike(name) {
			name = "v_" + name
			continue
		}
		if cppReserved[name] || hasAnySuffix(name, reservedSuffixes) || used[name] {
			name += "_"
			continue
		}
		break
	}
	used[name] = true
	return name
}

// macroLike reports whether a name is spelled like a C macro (INFINITY,
// HUGE_VAL, EOF): no lower-case letter, two characters at least.
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

func hasAnyPrefix(s string, ps []string) bool {
	for _, p := range ps {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func hasAnySuffix(s string, ps []string) bool {
	for _, p := range ps {
		if strings.HasSuffix(s, p) {
			return true
		}
	}
	return false
}

// cbAPI are the circular buffer calls of the API (and of its emulation),
// which a circular buffer named cb_<value> must not spell.
var cbAPI = map[string]bool{"cb_wait_front": true, "cb_pop_front": true, "cb_reserve_back": true,
	"cb_push_back": true, "cb_pages_available_at_front": true, "cb_pages_reservable_at_back": true,
	"cb_format": true, "cb_of": true, "cb_api": true}
