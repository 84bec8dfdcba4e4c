package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEmitDotClusters draws a fused program: the kernel is a cluster with
// its ops inside, arguments and results are nodes of their own, and every
// edge joins nodes that exist.
func TestEmitDotClusters(t *testing.T) {
	src, err := os.ReadFile("../examples/add_rmsnorm.tir")
	require.NoError(t, err)
	status, out, errOut := runTFC(t, nil, string(src), "--fuse", "--emit=dot", "-")
	require.Equal(t, exitOK, status, errOut)
	assert.True(t, strings.HasPrefix(out, "digraph \"module\" {\n"), out)
	assert.Equal(t, 1, strings.Count(out, "subgraph cluster_0 {"), out)
	assert.NotContains(t, out, "cluster_1", "one kernel")
	assert.Contains(t, out, `label = "graph.fused {kind = \"row\", row_len = 8192, schedule = \"cached\"}";`)
	assert.Contains(t, out, `[label = "%x\ntensor<4096x8192xbf16>", shape = ellipse];`)
	assert.Contains(t, out, `[label = "result #1\ntensor<4096x8192xbf16>", shape = ellipse];`)
	assert.Equal(t, strings.Count(out, "{"), strings.Count(out, "}"), "balanced braces")

	nodes := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s*(n\d+) \[label`).FindAllStringSubmatch(out, -1) {
		nodes[m[1]] = true
	}
	edges := regexp.MustCompile(`(?m)^\s*(n\d+) -> (n\d+) `).FindAllStringSubmatch(out, -1)
	require.NotEmpty(t, edges)
	for _, e := range edges {
		assert.True(t, nodes[e[1]] && nodes[e[2]], "edge %s -> %s joins unknown nodes", e[1], e[2])
	}
	// the residual %h leaves the kernel from the add inside it
	add := regexp.MustCompile(`(n\d+) \[label = "graph.add"\]`).FindStringSubmatch(out)
	require.NotNil(t, add)
	assert.Regexp(t, add[1]+` -> n\d+ \[label = "%h: tensor<4096x8192xbf16>"\]`, out)

	_, again, _ := runTFC(t, nil, string(src), "--fuse", "--emit=dot", "-")
	assert.Equal(t, out, again, "deterministic")
}

// TestEmitDotWithoutKernels draws ops and one cluster per function.
func TestEmitDotWithoutKernels(t *testing.T) {
	src := twoExps + strings.ReplaceAll(twoExps, "@f", "@g")
	status, out, errOut := runTFC(t, nil, src, "--emit=dot", "-")
	require.Equal(t, exitOK, status, errOut)
	assert.Contains(t, out, "subgraph cluster_func_0 {\n    label = \"@f\";")
	assert.Contains(t, out, "subgraph cluster_func_1 {\n    label = \"@g\";")
	assert.NotContains(t, out, "subgraph cluster_0")
	assert.Equal(t, 4, strings.Count(out, `[label = "graph.exp"]`))
}
