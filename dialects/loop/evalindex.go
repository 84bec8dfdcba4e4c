package loop

import "github.com/tensorforge/tensorforge/ir"

// EvalIndex evaluates index value v: a loop.const, or loop.addi, subi,
// muli, divi, remi or mini of such values, with leaf giving the value of
// any other (a loop's variable bound by the caller; nil: none). Division
// and remainder are taken only of a non-negative value by a positive one,
// where every backend's (signed, unsigned, truncating) agree; ok is false
// otherwise and where a value is neither.
func EvalIndex(v *ir.Value, leaf func(*ir.Value) (int64, bool)) (int64, bool) {
	op := v.DefiningOp()
	if c, ok := AsConst(op); ok {
		return int64(c.Value()), true
	}
	if op == nil || op.NumOperands() != 2 {
		if leaf != nil {
			return leaf(v)
		}
		return 0, false
	}
	switch op.Name() {
	case OpAddi, OpSubi, OpMuli, OpDivi, OpRemi, OpMini:
	default:
		if leaf != nil {
			return leaf(v)
		}
		return 0, false
	}
	x, ok1 := EvalIndex(op.Operand(0), leaf)
	y, ok2 := EvalIndex(op.Operand(1), leaf)
	if !ok1 || !ok2 {
		return 0, false
	}
	switch op.Name() {
	case OpAddi:
		return x + y, true
	case OpSubi:
		return x - y, true
	case OpMuli:
		return x * y, true
	case OpMini:
		return min(x, y), true
	}
	if y <= 0 || x < 0 {
		return 0, false
	}
	if op.Name() == OpDivi {
		return x / y, true
	}
	return x % y, true
}
