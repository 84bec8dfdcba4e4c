package numeric

import "math"

// Reference activation and IEEE 754-2019 max/min functions in float64,
// shared by the graph and loop interpreters so both give the same values.

// Sigmoid is 1/(1+e^-x), evaluated without overflow for either sign.
func Sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x) // also NaN for NaN
	return e / (1 + e)
}

// SiLU is x*Sigmoid(x), with its limit -0 at -inf (not -inf*0 = NaN).
func SiLU(x float64) float64 {
	if math.IsInf(x, -1) {
		return math.Copysign(0, -1)
	}
	return x * Sigmoid(x)
}

// ReLU is max(x, 0) with NaN propagated; -0 gives +0.
func ReLU(x float64) float64 {
	switch {
	case math.IsNaN(x):
		return x
	case x > 0:
		return x
	}
	return 0
}

// GeluErf is x*Phi(x) = x/2 * erfc(-x/sqrt(2)), accurate in both tails.
func GeluErf(x float64) float64 {
	if math.IsInf(x, -1) {
		return math.Copysign(0, -1)
	}
	return 0.5 * x * math.Erfc(-x/math.Sqrt2)
}

// GeluTanh is x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))), computed
// as x * Sigmoid(2u), the same function without the cancellation of
// 1 + tanh(u) for negative x.
func GeluTanh(x float64) float64 {
	if math.IsInf(x, -1) {
		return math.Copysign(0, -1)
	}
	u := math.Sqrt(2/math.Pi) * (x + 0.044715*x*x*x)
	return x * Sigmoid(2*u)
}

// Maximum is IEEE 754-2019 Maximum: NaN if either is NaN, +0 over -0.
func Maximum(a, b float64) float64 {
	switch {
	case math.IsNaN(a) || math.IsNaN(b):
		return math.NaN()
	case a > b:
		return a
	case b > a:
		return b
	case math.Signbit(a):
		return b
	}
	return a
}

// Minimum is IEEE 754-2019 Minimum: NaN if either is NaN, -0 over +0.
func Minimum(a, b float64) float64 {
	switch {
	case math.IsNaN(a) || math.IsNaN(b):
		return math.NaN()
	case a < b:
		return a
	case b < a:
		return b
	case math.Signbit(a):
		return a
	}
	return b
}
