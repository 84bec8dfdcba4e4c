package compile

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tensorforge/tensorforge/dialects/loop"
)

var sizes = []int{10_000, 100_000, 1_000_000}

func label(n int) string {
	if n >= 1_000_000 {
		return fmt.Sprintf("%dM", n/1_000_000)
	}
	return fmt.Sprintf("%dk", n/1000)
}

// BenchmarkO2 parses, verifies, compiles through -O2 (lower-to-loops and
// sram-alloc included, verifying after every pass) and prints programs
// of each shape and size, reporting graph ops per second.
func BenchmarkO2(b *testing.B) {
	for _, shape := range Shapes {
		for _, n := range sizes {
			src := Program(shape, n)
			b.Run(shape+"/"+label(n), func(b *testing.B) {
				b.SetBytes(int64(len(src)))
				for i := 0; i < b.N; i++ {
					out, err := CompileAndPrint(src)
					if err != nil {
						b.Fatal(err)
					}
					if !strings.Contains(out, "loop.kernel") {
						b.Fatal("no kernel in the output")
					}
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "ops/s")
			})
		}
	}
}

// BenchmarkChain200k is the chain of 200,000 ops the compile-time goal is
// stated for (under 10 s through -O2).
func BenchmarkChain200k(b *testing.B) {
	src := Program("chain", 200_000)
	for i := 0; i < b.N; i++ {
		if _, err := CompileAndPrint(src); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/compile")
}

// TestPrograms keeps the generated programs honest: each compiles, and
// fusion leaves kernels of up to max-ops ops, so 3000 ops (a third of
// them constants in the fan-out) become some 3000/64 kernels, not 3000
// nor one.
func TestPrograms(t *testing.T) {
	for _, shape := range Shapes {
		t.Run(shape, func(t *testing.T) {
			m, err := Compile(Program(shape, 3000))
			if err != nil {
				t.Fatal(err)
			}
			kernels := 0
			for o := m.Body().First(); o != nil; o = o.Next() {
				if _, ok := loop.AsKernel(o); ok {
					kernels++
				}
			}
			if kernels < 2000/64 || kernels > 3000/8 {
				t.Errorf("%d kernels for 3000 ops", kernels)
			}
		})
	}
}
