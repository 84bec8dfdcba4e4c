package triton

import (
	"fmt"
	"strings"
)

// Python's keywords and the other names no generated identifier may take:
// the modules and builtins the generated code refers to (a function named
// str would hide the builtin from the tensor checks), and the names of
// the keyword arguments it passes (so that a kernel never reads a
// variable where a keyword was meant).
var reservedNames = strings.Fields(`
	False None True and as assert async await break class continue def del elif else except
	finally for from global if import in is lambda nonlocal not or pass raise return try
	while with yield match case type
	torch triton tl libdevice float int range len tuple isinstance any all zip print
	str list dict set bool bytes object type min max abs sum round pow divmod map filter
	sorted reversed enumerate iter next getattr setattr hasattr id super open math
	Exception TypeError ValueError RuntimeError AssertionError NotImplemented Ellipsis
	__name__ __file__ __doc__ __builtins__ self cls
	mask other axis keep_dims eviction_policy propagate_nan dtype device num_warps
	BLOCK ROWS WIDE WIDE_FROM CONFIGS`)

// namer hands out Python identifiers, unique within one scope (a kernel,
// a launcher, the module): a wanted name is sanitized and, when taken,
// suffixed with _1, _2, ...
type namer struct {
	taken map[string]bool
	temps int
}

func newNamer(extraReserved ...string) *namer {
	n := &namer{taken: map[string]bool{}}
	for _, r := range reservedNames {
		n.taken[r] = true
	}
	for _, r := range extraReserved {
		n.taken[r] = true
	}
	return n
}

// fresh returns a unique identifier derived from want ("" gives t0, t1,
// ...).
func (n *namer) fresh(want string) string {
	base := sanitize(want)
	if base == "" {
		for {
			name := fmt.Sprintf("t%d", n.temps)
			n.temps++
			if !n.taken[name] {
				n.taken[name] = true
				return name
			}
		}
	}
	name := base
	for i := 1; n.taken[name]; i++ {
		name = fmt.Sprintf("%s_%d", base, i)
	}
	n.taken[name] = true
	return name
}

// sanitize turns an IR name (`x_1`, `rms.k0`, `0`) into a Python
// identifier, or "" when nothing of it is usable.
func sanitize(s string) string {
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isIdentPart(c) {
			sb.WriteByte(c)
		} else {
			sb.WriteByte('_')
		}
	}
	out := sb.String()
	if strings.Trim(out, "_") == "" {
		return ""
	}
	if out[0] >= '0' && out[0] <= '9' {
		// unnamed SSA values print as %0, %1: leave them to t0, t1, ...
		if strings.Trim(out, "0123456789") == "" {
			return ""
		}
		out = "v" + out
	}
	return out
}
