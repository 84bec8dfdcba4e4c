// Package randprog generates random, valid graph-dialect programs: the
// inputs of the differential tests (passes/difftest) and of the fuzzers
// that run pass pipelines on them.
//
//	text := randprog.GenerateText(42, randprog.Config{})
//
// gives a module such as
//
//	func.func @f0(%x0: tensor<?x4xbf16>, %x1: tensor<4xbf16>) -> (tensor<?x4xbf16>, tensor<?xf32>) {
//	  %0 = graph.rmsnorm %x0, %x1 : (tensor<?x4xbf16>, tensor<4xbf16>) -> tensor<?x4xbf16>
//	  %1 = graph.cast %0 : (tensor<?x4xbf16>) -> tensor<?x4xf32>
//	  %2 = graph.logsumexp %1 : (tensor<?x4xf32>) -> tensor<?xf32>
//	  return %0, %2 : tensor<?x4xbf16>, tensor<?xf32>
//	}
//
// Every op is made by the dialect's builders (graph.BuildAdd, ...), which
// infer result types and refuse what would not verify, so every program
// passes ir.Verify. The generator tracks the run-time extent of every
// dimension: a `?` dimension always stands for DynExtent elements, the
// extent eval.ExtremeInputs gives it, and operands are only combined where
// their run-time extents broadcast. The programs therefore also run in the
// reference interpreter with inputs from eval.RandomInputs (dynamic extent
// DynExtent) and eval.ExtremeInputs.
//
// What a program holds is chosen to reach the passes' rewrites: element-wise
// chains with NumPy broadcasting, casts between f32, bf16 and f16 (and, now
// and then, unchecked float-to-integer casts), reductions with and without
// keepdim, the composite ops (rmsnorm, layernorm, softmax, log_softmax,
// logsumexp, logaddexp, quantize, dequantize, requantize), shape ops
// (reshape, transpose, slice, concat, broadcast_to), matmul, constants,
// several results, dead ops, repeated ops, algebraic identities (x * 1,
// neg(neg x), transpose of a transpose) and the hand-written forms that
// legalize-numerics recognises (log(exp(a) + exp(b)), exp(x) / sum(exp(x))).
//
// Generation is deterministic: the same seed and Config give the same
// program, byte for byte.
package randprog

import (
	"fmt"
	"math/rand/v2"

	"github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/ir"
)

// DynExtent is the run-time extent of every `?` dimension of a generated
// program: the extent eval.ExtremeInputs uses, so that extreme inputs fit.
const DynExtent = eval.ExtremeDynExtent

// Config bounds the programs. The zero value gives the defaults.
type Config struct {
	// Funcs is the most functions in a module (1 to Funcs); default 2.
	Funcs int
	// MaxOps is the most ops a function computes with, constants and the
	// return not counted; default 12. Each function has 1 to MaxOps.
	MaxOps int
	// MaxRank is the highest rank of an argument; default 3.
	MaxRank int
	// MaxExtent is the largest static extent of an argument dimension;
	// default 6. Ops may build larger ones (concat, broadcast_to, matmul).
	MaxExtent int64
	// MaxElements bounds the run-time element count of every value;
	// default 1024.
	MaxElements int64
	// MaxArgs is the most arguments of a function; default 5.
	MaxArgs int
	// MaxResults is the most results of a function; default 3.
	MaxResults int
	// DynamicPercent is the chance, in percent, that a function has `?`
	// dimensions; default 25, and a negative value disables them.
	DynamicPercent int
	// NoIntCasts leaves out unchecked float-to-integer casts, whose
	// meaning legalize-numerics changes (it makes them saturate).
	NoIntCasts bool
	// NoQuant leaves out quantize, dequantize and requantize.
	NoQuant bool
	// AdversarialNames names values and functions in ways that trip
	// emitters: digits (%0), keywords of C++, Metal and Python (%int,
	// %lambda, %tl), names beside the ones emitters derive from them (%x
	// with %x_addr, %cb_x, %x.d0) and functions named like generated
	// kernels, helpers and C entry points (@main, @f_k0, @g_k0.task).
	// The program is the same as without it, names aside.
	AdversarialNames bool
}

// withDefaults fills in the zero fields.
func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.Funcs, 2)
	def(&c.MaxOps, 12)
	def(&c.MaxRank, 3)
	def(&c.MaxArgs, 5)
	def(&c.MaxResults, 3)
	if c.MaxExtent <= 0 {
		c.MaxExtent = 6
	}
	if c.MaxElements <= 0 {
		c.MaxElements = 1024
	}
	if c.DynamicPercent == 0 {
		c.DynamicPercent = 25
	}
	return c
}

// Generate builds a random module of 1 to cfg.Funcs functions named @f0,
// @f1, ... from r. An error means a bug in the generator (a builder
// refused an op it was given): a generated program always verifies.
func Generate(r *rand.Rand, cfg Config) (ir.Module, error) {
	cfg = cfg.withDefaults()
	m := ir.NewModule(ir.Location{})
	n := 1 + r.IntN(cfg.Funcs)
	for i := 0; i < n; i++ {
		f, err := generateFunc(r, cfg, fmt.Sprintf("f%d", i))
		if err != nil {
			return ir.Module{}, err
		}
		m.Body().Append(f.Operation)
	}
	if cfg.AdversarialNames {
		nameAdversarially(r, m)
	}
	return m, nil
}

// NewRand returns the random source GenerateText uses for a seed.
func NewRand(seed int64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), 0x7261_6e64_7072_6f67)) // "randprog"
}

// GenerateText returns the printed module Generate builds from seed. It
// panics only on a generator bug, which the package tests look for over
// thousands of seeds.
func GenerateText(seed int64, cfg Config) string {
	m, err := Generate(NewRand(seed), cfg)
	if err != nil {
		panic(fmt.Sprintf("randprog: seed %d: %v", seed, err))
	}
	return ir.Print(m.Operation, ir.PrintOptions{})
}
