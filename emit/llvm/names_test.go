package llvmemit

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLLVMIdent(t *testing.T) {
	assert.Equal(t, "x", llvmIdent("x"))
	assert.Equal(t, "x.d0", llvmIdent("x.d0"))
	assert.Equal(t, "a-b$c", llvmIdent("a-b$c"))
	assert.Equal(t, "_0", llvmIdent("0"))
	assert.Equal(t, "_0.d0", llvmIdent("0.d0"))
	assert.Equal(t, "_1_k0", llvmIdent("1_k0"))
	assert.Equal(t, "r_1", llvmIdent("r#1"))
	assert.Equal(t, "_", llvmIdent(""))
}

func TestGlobalNames(t *testing.T) {
	g := globalNames{}
	// functions first: ordinary names stay, reserved ones get a suffix
	assert.Equal(t, "f", g.claim("f"))
	assert.Equal(t, "main_1", g.claim("main"))
	assert.Equal(t, "expf_1", g.claim("expf"))
	assert.Equal(t, "utf_alloc", g.claim("tf_alloc"))
	assert.Equal(t, "ullvm.x", g.claim("llvm.x"))
	assert.Equal(t, "u__x", g.claim("__x"))
	assert.Equal(t, "g_k0.task", g.claim("g_k0.task"))
	// a kernel whose derived names are taken moves as a whole
	assert.Equal(t, "f_k0", g.claim("f_k0", ".grid", ".args", ".task"))
	assert.Equal(t, "g_k0_1", g.claim("g_k0", ".grid", ".args", ".task"))
	assert.True(t, g["g_k0_1.task"] && g["g_k0_1.args"] && g["g_k0_1.grid"])
	assert.Equal(t, "f_k0_1", g.claim("f_k0"))
}
