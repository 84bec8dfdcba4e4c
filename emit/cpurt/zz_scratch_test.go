package cpurt_test

import (
	"os"
	"testing"
	"time"

	geval "github.com/tensorforge/tensorforge/dialects/graph/eval"
	leval "github.com/tensorforge/tensorforge/dialects/loop/eval"
	"github.com/tensorforge/tensorforge/emit/cpurt"
	"github.com/tensorforge/tensorforge/parser"
)

func TestZZTiming(t *testing.T) {
	data, _ := os.ReadFile("../../examples/" + os.Getenv("EX") + ".tir")
	src := shrink(string(data))
	t0 := time.Now()
	lowered, err := compile(src, pipelines[os.Getenv("LV")]+","+lowerTail())
	if err != nil {
		t.Fatal(err)
	}
	t.Log("lower", time.Since(t0))
	orig, _ := parser.Parse("x", src)
	fn := orig.Funcs()[0]
	t0 = time.Now()
	p, err := cpurt.Compile(lowered, fn.SymName())
	if err != nil {
		t.Fatal(err)
	}
	t.Log("compile", time.Since(t0))
	in, _ := geval.RandomInputs(fn, 1, 1, 5)
	p.Threads = 1
	t0 = time.Now()
	_, err = p.Run(clone(in))
	t.Log("run", time.Since(t0), err)
	t0 = time.Now()
	_, err = leval.Run(lowered, fn.SymName(), clone(in))
	t.Log("leval", time.Since(t0), err)
	t0 = time.Now()
	_, err = geval.Run(fn, clone(in), geval.Options{})
	t.Log("geval", time.Since(t0), err)
}
