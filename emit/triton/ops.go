package triton

import (
	"fmt"
	"math"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// ---------------------------------------------------------------------------
// Element-wise ops
//
// Each element-wise op of the loop dialect is one Triton expression on
// f32 (f64, integer) values; the precision choices are those of
// Inductor's generated kernels:
//
//   - exp, exp2, log, log2, rsqrt and division use the GPU's fast
//     approximations (a few ulp) on f32, except a division whose quotient
//     is rounded to an integer (quantization), which is correctly rounded
//     (tl.div_rn), and a division by a power of two, which is an exact
//     multiplication;
//   - sqrt is correctly rounded (tl.sqrt_rn);
//   - log1p, expm1, tanh, sin, cos, pow, erfc and round half to even come
//     from libdevice, as do all transcendental functions on f64;
//   - max and min propagate NaN (tl.maximum with PropagateNan.ALL), as the
//     loop dialect defines them; tl.max and tl.min do not.
//
// Python operators take literal operands as weakly typed (the literal
// adopts the tensor's dtype); function calls get typed scalars
// (tl.full([], 0.5, tl.float32)), since tl.maximum and friends would type
// a literal as int32 or float32 on their own.

// unaryF32 spells the f32 unary ops; %s is the operand.
var unaryF32 = map[string]string{
	loop.OpNeg:        "-%s",
	loop.OpAbs:        "tl.abs(%s)",
	loop.OpExp:        "tl.exp(%s)",
	loop.OpExp2:       "tl.exp2(%s)",
	loop.OpLog:        "tl.log(%s)",
	loop.OpLog2:       "tl.log2(%s)",
	loop.OpLog1p:      "libdevice.log1p(%s)",
	loop.OpExpm1:      "libdevice.expm1(%s)",
	loop.OpSqrt:       "tl.sqrt_rn(%s)",
	loop.OpRsqrt:      "tl.rsqrt(%s)",
	loop.OpReciprocal: "1.0 / %s",
	loop.OpTanh:       "libdevice.tanh(%s)",
	loop.OpSigmoid:    "tl.sigmoid(%s)",
	loop.OpSilu:       "_silu(%s)",
	loop.OpRelu:       "_relu(%s)",
	loop.OpSin:        "libdevice.sin(%s)",
	loop.OpCos:        "libdevice.cos(%s)",
	loop.OpFloor:      "tl.floor(%s)",
	loop.OpCeil:       "tl.ceil(%s)",
	loop.OpRound:      "libdevice.rint(%s)",
}

// unaryF64 overrides unaryF32 for f64, where Triton's fast functions are
// f32 only.
var unaryF64 = map[string]string{
	loop.OpExp:     "libdevice.exp(%s)",
	loop.OpExp2:    "libdevice.exp2(%s)",
	loop.OpLog:     "libdevice.log(%s)",
	loop.OpLog2:    "libdevice.log2(%s)",
	loop.OpSqrt:    "tl.sqrt(%s)",
	loop.OpRsqrt:   "libdevice.rsqrt(%s)",
	loop.OpSigmoid: "_sigmoid_f64(%s)",
	loop.OpSilu:    "_silu_f64(%s)",
}

// helpersOf lists the module helpers an op spelling calls.
func helpersOf(spelling string) []string {
	var out []string
	for _, h := range helperNames {
		if strings.Contains(spelling, h+"(") {
			out = append(out, h)
		}
	}
	return out
}

// expr is the Triton expression of a pure op with one result.
func (k *kernelEmitter) expr(op *ir.Operation) (string, error) {
	name := op.Name()
	res := op.Result(0)
	kind := elemKind(res.Type())
	operands := op.Operands()

	// operands: names, literals, or typed scalars where a literal would be
	// typed on its own
	allConst := true
	for _, v := range operands {
		if _, _, ok := constOf(v); !ok {
			allConst = false
		}
	}
	args := make([]string, len(operands))
	typed := func(i int) error {
		s, err := k.typedRef(operands[i])
		args[i] = s
		return err
	}
	for i, v := range operands {
		args[i] = k.ref(v)
	}
	typeAll := func() error {
		for i := range operands {
			if err := typed(i); err != nil {
				return err
			}
		}
		return nil
	}
	if allConst && len(operands) > 0 {
		if err := typed(0); err != nil {
			return "", err
		}
	}
	fail := func(err error) (string, error) { return "", kernelError(op, "%v", err) }

	switch name {
	case loop.OpAddi:
		return args[0] + " + " + args[1], nil
	case loop.OpSubi:
		return args[0] + " - " + args[1], nil
	case loop.OpMuli:
		return args[0] + " * " + args[1], nil
	case loop.OpDivi:
		return args[0] + " // " + args[1], nil
	case loop.OpRemi:
		return args[0] + " % " + args[1], nil
	case loop.OpMini:
		return fmt.Sprintf("tl.minimum(%s, %s)", args[0], args[1]), nil
	case loop.OpClampIndex:
		// widened to int64 first, so that ui32 and i32 indices compare as the interpreter's
		return fmt.Sprintf("tl.maximum(tl.minimum(%s.to(tl.int64), %s - 1), 0)", args[0], args[1]), nil
	case loop.OpCast:
		if err := typed(0); err != nil {
			return fail(err)
		}
		t, err := tlType(kind)
		if err != nil {
			return fail(err)
		}
		return args[0] + ".to(" + t + ")", nil
	case loop.OpCmp:
		c, _ := loop.AsCmp(op)
		sym, ok := map[string]string{"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[c.Predicate()]
		if !ok {
			return "", kernelError(op, "has an unknown predicate '%s'", c.Predicate())
		}
		return args[0] + " " + sym + " " + args[1], nil
	case loop.OpSelect:
		if err := typeAll(); err != nil {
			return fail(err)
		}
		return fmt.Sprintf("tl.where(%s, %s, %s)", args[0], args[1], args[2]), nil
	case loop.OpFma:
		if kind.IsInt() {
			return args[0] + " * " + args[1] + " + " + args[2], nil
		}
		if err := typeAll(); err != nil {
			return fail(err)
		}
		return fmt.Sprintf("tl.fma(%s, %s, %s)", args[0], args[1], args[2]), nil
	}

	if kind.IsInt() {
		return k.intExpr(op, args, typeAll)
	}
	if kind != ir.F32 && kind != ir.F64 {
		return "", kernelError(op, "computes in %s; the loop dialect computes floats in f32 or f64", kind)
	}
	switch name {
	case loop.OpAdd:
		return args[0] + " + " + args[1], nil
	case loop.OpSub:
		return args[0] + " - " + args[1], nil
	case loop.OpMul:
		return args[0] + " * " + args[1], nil
	case loop.OpDiv:
		return k.division(op, args, kind)
	case loop.OpMax, loop.OpMin:
		if err := typeAll(); err != nil {
			return fail(err)
		}
		return fmt.Sprintf("%s(%s, %s)", k.combineFn(map[string]string{loop.OpMax: "max", loop.OpMin: "min"}[name]), args[0], args[1]), nil
	case loop.OpPow:
		if err := typeAll(); err != nil {
			return fail(err)
		}
		return fmt.Sprintf("libdevice.pow(%s, %s)", args[0], args[1]), nil
	case loop.OpGelu:
		if err := typeAll(); err != nil {
			return fail(err)
		}
		g, _ := loop.AsGelu(op)
		fn := "_gelu"
		if g.Approximate() == "tanh" {
			fn = "_gelu_tanh"
		}
		if kind == ir.F64 && fn == "_gelu_tanh" {
			fn += "_f64" // erfc of libdevice serves both widths
		}
		k.uses[fn] = true
		return fn + "(" + args[0] + ")", nil
	}
	spelling, ok := unaryF32[name]
	if kind == ir.F64 {
		if s, ok64 := unaryF64[name]; ok64 {
			spelling = s
		}
	}
	if !ok {
		return "", kernelError(op, "is not an element-wise op the Triton emitter knows")
	}
	if spelling != "-%s" && spelling != "1.0 / %s" {
		if err := typeAll(); err != nil {
			return fail(err)
		}
	}
	for _, h := range helpersOf(spelling) {
		k.uses[h] = true
	}
	return fmt.Sprintf(spelling, args[0]), nil
}

// intExpr spells the element-wise ops on integers: they wrap to their
// type, as Triton's integer arithmetic does; division truncates.
func (k *kernelEmitter) intExpr(op *ir.Operation, args []string, typeAll func() error) (string, error) {
	switch op.Name() {
	case loop.OpAdd:
		return args[0] + " + " + args[1], nil
	case loop.OpSub:
		return args[0] + " - " + args[1], nil
	case loop.OpMul:
		return args[0] + " * " + args[1], nil
	case loop.OpDiv:
		return args[0] + " // " + args[1], nil
	case loop.OpNeg:
		return "-" + args[0], nil
	case loop.OpFloor, loop.OpCeil, loop.OpRound:
		return args[0], nil
	}
	if err := typeAll(); err != nil {
		return "", kernelError(op, "%v", err)
	}
	switch op.Name() {
	case loop.OpAbs:
		return "tl.abs(" + args[0] + ")", nil
	case loop.OpMax:
		return fmt.Sprintf("tl.maximum(%s, %s)", args[0], args[1]), nil
	case loop.OpMin:
		return fmt.Sprintf("tl.minimum(%s, %s)", args[0], args[1]), nil
	case loop.OpRelu:
		t, _ := tlType(elemKind(op.Result(0).Type()))
		return fmt.Sprintf("tl.maximum(%s, tl.full([], 0, %s))", args[0], t), nil
	}
	return "", kernelError(op, "does not take integer operands")
}

// division spells a float division: by a power of two, an exact
// multiplication; with a quotient that is rounded to an integer next,
// correctly rounded; otherwise Triton's `/`.
func (k *kernelEmitter) division(op *ir.Operation, args []string, kind ir.ElemKind) (string, error) {
	if c, _, ok := constOf(op.Operand(1)); ok && c != 0 && !math.IsInf(c, 0) {
		if frac, _ := math.Frexp(math.Abs(c)); frac == 0.5 {
			return args[0] + " * " + pyLiteral(1/c, kind), nil
		}
	}
	if kind == ir.F32 && roundedToInteger(op.Result(0)) {
		a, err := k.typedRef(op.Operand(0))
		if err != nil {
			return "", err
		}
		b, err := k.typedRef(op.Operand(1))
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("tl.div_rn(%s, %s)", a, b), nil
	}
	return args[0] + " / " + args[1], nil
}

// roundedToInteger reports whether v is rounded to an integer by one of
// its users, where a quotient off by an ulp can change the result.
func roundedToInteger(v *ir.Value) bool {
	for _, u := range v.Users() {
		switch u.Name() {
		case loop.OpRound, loop.OpFloor, loop.OpCeil:
			return true
		case loop.OpCast:
			if elemKind(u.Result(0).Type()).IsInt() {
				return true
			}
		}
	}
	return false
}
