package triton

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// Resident splits (resident.go): softmax over a vocabulary of logits, 16
// programs per row each keeping 16000 columns in registers, as loaded
// (bf16), widened where read.
const residentSoftmax = `
func.func @softmax(%s: tensor<?x256000xbf16>) -> tensor<?x256000xbf16> {
  %x = graph.cast %s : (tensor<?x256000xbf16>) -> tensor<?x256000xf32>
  %p = graph.softmax %x {axis = -1} : tensor<?x256000xf32>
  %y = graph.cast %p : (tensor<?x256000xf32>) -> tensor<?x256000xbf16>
  return %y : tensor<?x256000xbf16>
}`

func TestResidentSoftmaxKernel(t *testing.T) {
	text := emitResident(t, residentSoftmax)
	requirePython(t, text)
	k := function(t, text, "softmax_k0")
	inOrder(t, k,
		"def softmax_k0(s, y, split_max, split_sum, tickets, groups, s_d0, y_d0, split_max_d0, split_sum_d0, groups_d0, BLOCK: tl.constexpr):",
		"# row, resident:",
		"t0 = split_max_d0 * 16",
		// the instance's number: a ticket, the counter zeroed by the last
		"ticket = tl.atomic_add(tickets, 1)",
		"if ticket == t0 - 1:",
		"    tl.store(tickets, 0)",
		"t = ticket.to(tl.int64)",
		"split = t % 16",
		"t1 = t // 16",
		// the split, one block of 16384 lanes, 16000 of them in the row
		"i = tl.arange(0, BLOCK)",
		"cmask = i < 16000",
		"s_1 = tl.load(s + (t1 * 256000) + t3, mask=cmask)",
		"s_1.to(tl.float32)",
		"tl.store(split_max + (t1 * 16) + split, ",
		"tl.store(split_sum + (t1 * 16) + split, ",
		// the group sync: arrivals at 2 g, departures at 2 g + 1
		"tl.debug_barrier()",
		"sync = groups + (t1 * 2)",
		`tl.atomic_add(sync, 1, sem="release")`,
		`while tl.atomic_add(sync, 0, sem="acquire") < 16:`,
		"    pass",
		"tl.debug_barrier()",
		// the row's 16 partial results, blocks of 16, through L2
		"tl.arange(0, 16)",
		`tl.load(split_max + (t1 * 16) + i_3, cache_modifier=".cg")`,
		`tl.load(split_sum + (t1 * 16) + i_4, cache_modifier=".cg")`,
		// the normalised split from the register block, as loaded
		"s_1.to(tl.float32)",
		".to(tl.bfloat16)",
		"tl.store(y + (t1 * 256000) + ",
		", mask=cmask_3)",
		// the departure, last: the last out resets both counters
		"left = tl.atomic_add(sync + 1, 1)",
		"if left == 15:",
		"    tl.store(sync, 0)",
		"    tl.store(sync + 1, 0)")
	// the ticket numbers the instance, not the program id
	assert.NotContains(t, k, "tl.program_id")
	// the split is read from DRAM once, and not through .cg (the kernel
	// does not store it)
	assert.Equal(t, 1, strings.Count(k, "tl.load(s "))
	assert.Equal(t, 3, strings.Count(k, `cache_modifier=".cg"`))
	// the sync's counters are reset inside the if, the ticket's too
	assert.Equal(t, 2, strings.Count(k, "tl.debug_barrier()"))
	assert.Contains(t, text, `"softmax_k0": {"BLOCK": 16384, "num_warps": 8},`)
	assert.NotContains(t, k, "ROWS")
}

func TestResidentSoftmaxLauncher(t *testing.T) {
	text := emitResident(t, residentSoftmax)
	l := function(t, text, "softmax")
	inOrder(t, l,
		"split_max = torch.empty((s_d0, 16), dtype=torch.float32, device=dev)",
		"split_sum = torch.empty((s_d0, 16), dtype=torch.float32, device=dev)",
		// the counters come from the cache, zeroed once
		`tickets = _counters(dev, "softmax.tickets", 1)`,
		`groups = _counters(dev, "softmax.groups", (s_d0 * 2))`,
		"grid = ((s_d0 * 16),)",
		"if grid[0] > 0:",
		"_launch(softmax_k0, grid, (s, y, split_max, split_sum, tickets, groups, s_d0, s_d0, s_d0, s_d0, s_d0), BLOCK=cfg[\"BLOCK\"], num_warps=cfg[\"num_warps\"])")
	assert.NotContains(t, l, "tickets = torch.")
	assert.NotContains(t, l, "groups = torch.")
	assert.Equal(t, 1, strings.Count(text, "def _counters(dev, name, n):"))
	inOrder(t, text, "_COUNTERS = {}", "def _counters(dev, name, n):", "def softmax(s):")

	// a module without counters has no cache
	plain := emitO2(t, rmsChain)
	assert.NotContains(t, plain, "_counters")
	assert.NotContains(t, plain, "_COUNTERS")
}

// The splits of other lengths: 4 of 15360 (log_softmax), 32 of 16384.
func TestResidentOtherSplits(t *testing.T) {
	text := emitResident(t, `
func.func @lsm(%s: tensor<?x61440xbf16>) -> tensor<?x61440xbf16> {
  %x = graph.cast %s : (tensor<?x61440xbf16>) -> tensor<?x61440xf32>
  %p = graph.log_softmax %x {axis = -1} : tensor<?x61440xf32>
  %y = graph.cast %p : (tensor<?x61440xf32>) -> tensor<?x61440xbf16>
  return %y : tensor<?x61440xbf16>
}

func.func @wide(%s: tensor<?x524288xbf16>) -> tensor<?x524288xbf16> {
  %x = graph.cast %s : (tensor<?x524288xbf16>) -> tensor<?x524288xf32>
  %p = graph.softmax %x {axis = -1} : tensor<?x524288xf32>
  %y = graph.cast %p : (tensor<?x524288xf32>) -> tensor<?x524288xbf16>
  return %y : tensor<?x524288xbf16>
}`)
	requirePython(t, text)
	k := function(t, text, "lsm_k0")
	inOrder(t, k, "ticket = tl.atomic_add(tickets, 1)", "cmask = i < 15360",
		`while tl.atomic_add(sync, 0, sem="acquire") < 4:`,
		"tl.arange(0, 4)", `cache_modifier=".cg"`, "tl.log(", "if left == 3:")
	assert.Contains(t, text, `"lsm_k0": {"BLOCK": 16384, "num_warps": 8},`)
	w := function(t, text, "wide_k0")
	inOrder(t, w, "i = tl.arange(0, BLOCK)",
		`while tl.atomic_add(sync, 0, sem="acquire") < 32:`,
		"tl.arange(0, 32)", `cache_modifier=".cg"`, "if left == 31:")
	// the split fills its block: no column mask
	assert.NotContains(t, w, "cmask")
	// each function keeps its own counters
	inOrder(t, text, `tickets = _counters(dev, "lsm.tickets", 1)`, `tickets = _counters(dev, "wide.tickets", 1)`)
}

// A ticket or group sync outside a resident split, or nested in a loop,
// is an error at the op.
func TestResidentErrors(t *testing.T) {
	m := lower(t, residentSoftmax, o2Resident)
	var kernel loop.KernelOp
	for op := m.Body().First(); op != nil; op = op.Next() {
		if k, ok := loop.AsKernel(op); ok {
			kernel = k
		}
	}
	require.NotNil(t, kernel.Operation)
	kernel.SetAttr("schedule", ir.StringAttr("online"))
	_, err := Emit(m, Options{Target: "h200"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "'loop.ticket' op cannot be translated to Triton: is in a kernel that is not a resident split")
}

// _counters, run with a stand-in for torch: counters are kept per device,
// stream and name, grown zeroed (the old tensor kept alive), and not kept
// when allocated during a CUDA graph capture.
func TestResidentCountersCache(t *testing.T) {
	script := `
import types

class T:
    def __init__(self, n):
        self.n = n
    def numel(self):
        return self.n

state = {"stream": 7, "capturing": False, "zeros": 0}

def zeros(shape, dtype=None, device=None):
    assert dtype == "int32", dtype
    state["zeros"] += 1
    return T(shape[0])

torch = types.SimpleNamespace(
    int32="int32", zeros=zeros,
    _C=types.SimpleNamespace(_cuda_getCurrentRawStream=lambda dev: state["stream"]),
    cuda=types.SimpleNamespace(current_device=lambda: 0,
                               is_current_stream_capturing=lambda: state["capturing"]))
exec(SOURCE)

a = _counters("cuda:0", "f.groups", 10)
assert a.numel() >= 10 and state["zeros"] == 1
assert _counters("cuda:0", "f.groups", 10) is a and state["zeros"] == 1
assert _counters("cuda:0", "f.groups", a.numel()) is a
# another buffer, another stream: counters of their own
b = _counters("cuda:0", "f.tickets", 1)
assert b is not a
state["stream"] = 9
c = _counters("cuda:0", "f.groups", 10)
assert c is not a
state["stream"] = 7
# a larger launch: a new zeroed tensor, the old one kept alive
d = _counters("cuda:0", "f.groups", 10 * a.numel())
assert d is not a and d.numel() >= 10 * a.numel() and any(x is a for x in _COUNTERS_OLD)
assert _counters("cuda:0", "f.groups", 10) is d
# during a capture a miss is zeroed by the graph and not kept
state["capturing"] = True
e = _counters("cuda:0", "f.new", 5)
assert e.numel() >= 5 and _counters("cuda:0", "f.new", 5) is not e
assert not any(k[2] == "f.new" for k in _COUNTERS)
assert _counters("cuda:0", "f.groups", 10) is d
print("ok")
`
	runStandIn(t, countersSource, script)
}

// o2Resident is o2 with resident splits of at most 64 KiB
// (lower-to-loops{resident=true}, not the default).
const o2Resident = "canonicalize,cse,legalize-numerics,decompose,fuse,canonicalize,cse,dce,lower-to-loops{resident=true,resident-bytes=65536,split-rows-below=1},sram-alloc"

// emitResident is emitO2 with resident splits.
func emitResident(t *testing.T, src string) string {
	t.Helper()
	text, err := Emit(lower(t, src, o2Resident), Options{Source: "test.tir", Target: "h200"})
	require.NoError(t, err)
	return text
}

// _mm_ws, run with a stand-in for torch: split-K workspaces are kept per
// device, stream and dtype, replaced by a larger one when a launch needs
// more, and not kept when allocated during a CUDA graph capture.
func TestMatMulWorkspaceCache(t *testing.T) {
	script := `
import os
import types

class T:
    def __init__(self, n):
        self.n = n
    def numel(self):
        return self.n

class Dev:
    index = 0

state = {"stream": 7, "capturing": False, "empty": 0}

def empty(shape, dtype=None, device=None):
    state["empty"] += 1
    return T(shape[0])

torch = types.SimpleNamespace(
    float32="float32", int32="int32", empty=empty,
    _C=types.SimpleNamespace(_cuda_getCurrentRawStream=lambda dev: state["stream"]),
    cuda=types.SimpleNamespace(current_device=lambda: 0,
                               is_current_stream_capturing=lambda: state["capturing"]))
exec(SOURCE)

dev = Dev()
a = _mm_ws(dev, 100, torch.float32)
assert a.numel() >= 100 and state["empty"] == 1
assert _mm_ws(dev, 100, torch.float32) is a and _mm_ws(dev, 50, torch.float32) is a and state["empty"] == 1
# int32 sums, another stream: workspaces of their own
assert _mm_ws(dev, 100, torch.int32) is not a
state["stream"] = 9
assert _mm_ws(dev, 100, torch.float32) is not a
state["stream"] = 7
# a larger launch replaces it
b = _mm_ws(dev, 1000, torch.float32)
assert b is not a and b.numel() >= 1000 and _mm_ws(dev, 100, torch.float32) is b
# during a capture a miss is the graph's alone; a hit is the kept one
state["capturing"] = True
c = _mm_ws(dev, 5000, torch.float32)
assert c.numel() >= 5000 and _mm_ws(dev, 1000, torch.float32) is b
print("ok")
`
	runStandIn(t, matmulConfigSource, script)
}

// _launch, run with stand-ins for torch and Triton: the first call of a
// specialisation goes through kernel[grid] on the buffers' device and keeps
// its CompiledKernel; later calls launch it directly on the device's
// current stream; a new specialisation (an integer's being 1, a pointer's
// alignment) or other constexprs compile again; launch hooks get their
// metadata.
func TestLaunchKeepsCompiledKernels(t *testing.T) {
	script := `
import contextlib, os, types

state = {"device": 0, "jit": [], "runs": []}

class Tensor:
    def __init__(self, dev, ptr):
        self.dev, self.ptr = dev, ptr
    def get_device(self):
        return self.dev
    def data_ptr(self):
        return self.ptr

@contextlib.contextmanager
def device(d):
    old = state["device"]
    state["device"] = d
    yield
    state["device"] = old

torch = types.SimpleNamespace(
    _C=types.SimpleNamespace(_cuda_getCurrentRawStream=lambda dev: 100 + dev),
    cuda=types.SimpleNamespace(device=device, current_device=lambda: state["device"]))

class Compiled:
    function, packed_metadata = "fn", "md"
    def run(self, gx, gy, gz, stream, function, packed, md, enter, leave, *args):
        state["runs"].append((gx, gy, gz, stream, md, args))
    def launch_metadata(self, g, stream, *args):
        return "launch-md"

class Kernel:
    arg_names = ["x", "n", "BLOCK"]
    def __getitem__(self, grid):
        def call(*args, **meta):
            state["jit"].append((state["device"], grid, meta))
            return Compiled()
        return call

triton = types.SimpleNamespace(__version__="3.6.0")
hooks = types.SimpleNamespace(launch_enter_hook=types.SimpleNamespace(calls=[]), launch_exit_hook=types.SimpleNamespace(calls=[]))
exec(SOURCE.replace("from triton import knobs as _knobs", "_knobs = types.SimpleNamespace(runtime=hooks)"))
assert _fast_launch

k = Kernel()
x = Tensor(1, 4096)
_launch(k, (4,), (x, 7), BLOCK=64)
assert state["jit"] == [(1, (4,), {"BLOCK": 64})] and state["runs"] == [], state
_launch(k, (4,), (x, 7), BLOCK=64)
assert len(state["jit"]) == 1 and state["runs"] == [(4, 1, 1, 101, None, (x, 7, 64))], state
# n = 1, a pointer off 16 bytes, other constexprs: specialised again
_launch(k, (4,), (x, 1), BLOCK=64)
_launch(k, (4,), (Tensor(1, 4104), 7), BLOCK=64)
_launch(k, (4,), (x, 7), BLOCK=128)
assert len(state["jit"]) == 4, state["jit"]
_launch(k, (2, 3), (x, 9), BLOCK=64)  # 9 specialises as 7 does
assert len(state["jit"]) == 4 and state["runs"][-1][:4] == (2, 3, 1, 101), state["runs"]
# a profiler's hook: the launch metadata is built
hooks.launch_enter_hook.calls.append(print)
_launch(k, (4,), (x, 7), BLOCK=64)
assert state["runs"][-1][4] == "launch-md", state["runs"][-1]
print("ok")
`
	runStandIn(t, launchSource, script)
}

// runStandIn runs script with SOURCE holding source (Python the emitter
// writes into every module), under python3, and requires it to print "ok".
func runStandIn(t *testing.T, source, script string) {
	t.Helper()
	python, err := exec.LookPath("python3")
	require.NoError(t, err)
	dir := t.TempDir()
	src := filepath.Join(dir, "source.py")
	require.NoError(t, os.WriteFile(src, []byte(source), 0o644))
	prog := filepath.Join(dir, "check.py")
	require.NoError(t, os.WriteFile(prog, []byte("SOURCE = open(__import__('sys').argv[1]).read()\n"+script), 0o644))
	out, err := exec.Command(python, prog, src).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "ok\n", string(out))
}
