package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/tensorforge/tensorforge/ir"
)

// The dot emitter draws the IR after the pipeline as a Graphviz graph:
//
//	tfc --fuse --emit=dot model.tir | dot -Tsvg > model.svg
//
// Ops are boxes and values are the edges between them, labelled with
// their names and types. Function arguments and results are ellipses of their own.
// Each function is a cluster, and so is each kernel (graph.fused) inside
// it, `subgraph cluster_N` numbered through the module, with the ops of
// its body inside; an edge into a kernel goes straight to the op that
// reads the operand, and an edge out of it from the op that computes the
// result. The same input always gives the same text.
//
//	digraph "module" {
//	  subgraph cluster_func_0 {
//	    label = "@rms_silu_mul";
//	    n0 [label = "%x\ntensor<4096x8192xbf16>", shape = ellipse];
//	    subgraph cluster_0 {
//	      label = "graph.fused {kind = \"row\", row_len = 8192, schedule = \"one-pass\"}";
//	      n3 [label = "graph.cast"];
//	      ...
//	    }
//	    n0 -> n3 [label = "tensor<4096x8192xbf16>"];
//	  }
//	}
func init() {
	registerEmitter(&emitter{
		kind:    "dot",
		summary: "a Graphviz drawing of the IR after the pipeline, kernels (graph.fused) as clusters",
		emit: func(req *emitRequest) error {
			_, err := io.WriteString(req.Out, drawDot(req.Module))
			return err
		},
	})
}

// dotWriter accumulates the drawing of one module.
type dotWriter struct {
	sb       strings.Builder
	indent   int
	nodes    map[*ir.Operation]string
	args     map[*ir.Value]string // function arguments
	clusters int
	nextNode int
	edges    []string // drawn after the nodes of the current function
}

// drawDot draws m.
func drawDot(m ir.Module) string {
	w := &dotWriter{nodes: map[*ir.Operation]string{}, args: map[*ir.Value]string{}}
	w.line("digraph \"module\" {")
	w.indent++
	w.line("graph [fontname = \"Helvetica\", rankdir = TB];")
	w.line("node [fontname = \"Helvetica\", shape = box, style = rounded];")
	w.line("edge [fontname = \"Helvetica\", fontsize = 10];")
	for i, f := range m.Funcs() {
		w.function(i, f)
	}
	w.indent--
	w.line("}")
	return w.sb.String()
}

func (w *dotWriter) line(s string) {
	w.sb.WriteString(strings.Repeat("  ", w.indent))
	w.sb.WriteString(s)
	w.sb.WriteByte('\n')
}

func (w *dotWriter) newNode() string {
	id := fmt.Sprintf("n%d", w.nextNode)
	w.nextNode++
	return id
}

// dotQuote quotes s as a DOT string; "\n" in s stays a line break.
func dotQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// function draws one function as a cluster.
func (w *dotWriter) function(i int, f ir.Func) {
	w.line(fmt.Sprintf("subgraph cluster_func_%d {", i))
	w.indent++
	w.line("label = " + dotQuote("@"+f.SymName()) + ";")
	w.edges = nil
	if f.Body() == nil {
		w.indent--
		w.line("}")
		return
	}
	for j, a := range f.Args() {
		id := w.newNode()
		w.args[a] = id
		name := fmt.Sprintf("argument #%d", j)
		if a.Name != "" {
			name = "%" + a.Name
		}
		w.line(fmt.Sprintf("%s [label = %s, shape = ellipse];", id, dotQuote(name+"\n"+a.Type().String())))
	}
	w.block(f.Body())
	if ret := f.Return(); ret != nil {
		for j, v := range ret.Operands() {
			id := w.newNode()
			w.line(fmt.Sprintf("%s [label = %s, shape = ellipse];", id, dotQuote(fmt.Sprintf("result #%d\n%s", j, v.Type()))))
			w.edge(v, id)
		}
	}
	for _, e := range w.edges {
		w.line(e)
	}
	w.indent--
	w.line("}")
}

// block draws the ops of b, terminators aside.
func (w *dotWriter) block(b *ir.Block) {
	for _, op := range b.Ops() {
		if op.HasTrait(ir.Terminator) {
			continue
		}
		if op.NumRegions() > 0 {
			w.cluster(op)
			continue
		}
		id := w.newNode()
		w.nodes[op] = id
		w.line(fmt.Sprintf("%s [label = %s];", id, dotQuote(opLabel(op))))
		for _, v := range op.Operands() {
			w.edge(v, id)
		}
	}
}

// cluster draws an op with regions as a cluster holding its body. A
// graph.fused is drawn through: its operands lead to the ops reading the
// body's arguments and its results come from the ops computing them.
// Any other op with regions gets a node of its own inside the cluster.
func (w *dotWriter) cluster(op *ir.Operation) {
	w.line(fmt.Sprintf("subgraph cluster_%d {", w.clusters))
	w.clusters++
	w.indent++
	w.line("label = " + dotQuote(opHeader(op)) + ";")
	w.line("style = \"rounded,filled\";")
	w.line("fillcolor = \"#eef3fb\";")
	if !isFusedLike(op) {
		id := w.newNode()
		w.nodes[op] = id
		w.line(fmt.Sprintf("%s [label = %s];", id, dotQuote(op.Name())))
		for _, v := range op.Operands() {
			w.edge(v, id)
		}
	}
	for _, r := range op.Regions() {
		for _, b := range r.Blocks {
			if !isFusedLike(op) {
				for j, a := range b.Args {
					id := w.newNode()
					w.args[a] = id
					w.line(fmt.Sprintf("%s [label = %s, shape = ellipse];", id, dotQuote(fmt.Sprintf("^arg%d\n%s", j, a.Type()))))
				}
			}
			w.block(b)
		}
	}
	w.indent--
	w.line("}")
}

// isFusedLike reports whether op is drawn through: one block whose
// arguments stand for the operands and whose terminator yields the
// results, as graph.fused is.
func isFusedLike(op *ir.Operation) bool {
	if op.Name() != "graph.fused" || op.NumRegions() != 1 || len(op.Region(0).Blocks) != 1 {
		return false
	}
	b := op.Region(0).Blocks[0]
	return len(b.Args) == op.NumOperands() && b.Last() != nil && b.Last().NumOperands() == op.NumResults()
}

// source returns the node a value comes from, looking through kernels.
func (w *dotWriter) source(v *ir.Value) (string, bool) {
	for depth := 0; depth < 64; depth++ {
		if v.IsBlockArg() {
			if id, ok := w.args[v]; ok {
				return id, true
			}
			owner := v.OwnerBlock().ParentOp()
			if owner == nil || !isFusedLike(owner) {
				return "", false
			}
			v = owner.Operand(v.ResultIndex())
			continue
		}
		d := v.DefiningOp()
		if isFusedLike(d) {
			v = d.Region(0).Blocks[0].Last().Operand(v.ResultIndex())
			continue
		}
		id, ok := w.nodes[d]
		return id, ok
	}
	return "", false
}

// edge records an edge from the source of v to the node to.
func (w *dotWriter) edge(v *ir.Value, to string) {
	from, ok := w.source(v)
	if !ok {
		return
	}
	label := v.Type().String()
	if v.Name != "" {
		label = "%" + v.Name + ": " + label
	}
	w.edges = append(w.edges, fmt.Sprintf("%s -> %s [label = %s];", from, to, dotQuote(label)))
}

// opLabel is an op's name with its attributes; a long dense constant is
// shortened.
func opLabel(op *ir.Operation) string {
	label := op.Name()
	attrs := op.Attrs.String()
	if len(attrs) > 60 {
		attrs = attrs[:57] + "...}"
	}
	if attrs != "" {
		label += "\n" + attrs
	}
	return label
}

// opHeader is the label of a cluster: the op's name and attributes.
func opHeader(op *ir.Operation) string {
	if attrs := op.Attrs.String(); attrs != "" {
		return op.Name() + " " + attrs
	}
	return op.Name()
}
