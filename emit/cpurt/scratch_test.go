package cpurt

import (
	"math"
	"os"
	"testing"

	"github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/parser"
)

func TestScratchRMS(t *testing.T) {
	src, _ := os.ReadFile("../llvm/testdata/rms.tir")
	m, err := parser.Parse("rms.tir", string(src))
	if err != nil {
		t.Fatal(err)
	}
	if err := ir.Verify(m.Operation); err != nil {
		t.Fatal(err)
	}
	p, err := Compile(m, "rms")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	x := eval.NewTensor(ir.F32, []int64{3, 64})
	for i := range x.Data {
		x.Data[i] = float64(i%7) - 3
	}
	w := eval.NewTensor(ir.F32, []int64{64})
	for i := range w.Data {
		w.Data[i] = 0.5
	}
	outs, err := p.Run([]*eval.Tensor{x, w})
	if err != nil {
		t.Fatal(err)
	}
	for r := 0; r < 3; r++ {
		ss := 0.0
		for c := 0; c < 64; c++ {
			v := x.Data[r*64+c]
			ss += v * v
		}
		rs := 1 / math.Sqrt(ss/64+1e-5)
		for c := 0; c < 64; c++ {
			want := x.Data[r*64+c] * rs * 0.5
			got := outs[0].Data[r*64+c]
			if math.Abs(got-want) > 1e-5 {
				t.Fatalf("r%d c%d: got %v want %v", r, c, got, want)
			}
		}
	}
	t.Log(outs[0].Shape, outs[0].Data[:8])
}
