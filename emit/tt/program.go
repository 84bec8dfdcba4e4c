package tt

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/loop"
)

// Program is program.json, the description a tt-metal host program needs
// to run the emitted kernels (docs/backend-tt.md shows one):
//
//	{
//	  "target": "blackhole-p150",
//	  "grid": {"x": 12, "y": 10, "cores": 120},
//	  "functions": [{"name": "rms_silu_mul", "buffers": [...], "launches": [...]}],
//	  "kernels": [{"name": "rms_silu_mul_k0", "circular_buffers": [...], "reader": {...}, ...}]
//	}
//
// Every list is in a fixed order (arguments, program order, buffer index),
// so the same module gives the same bytes.
type Program struct {
	Target         string     `json:"target"`
	Grid           Grid       `json:"grid"`
	L1BytesPerCore int64      `json:"l1_bytes_per_core"`
	Tile           TileShape  `json:"tile"`
	Functions      []Function `json:"functions"`
	Kernels        []Kernel   `json:"kernels"`
}

// Grid is the compute grid of one chip; work goes to its cores in
// row-major order (core (x, y) is number y*X + x).
type Grid struct {
	X     int `json:"x"`
	Y     int `json:"y"`
	Cores int `json:"cores"`
}

// TileShape is the tile every buffer is laid out in.
type TileShape struct {
	Rows int `json:"rows"`
	Cols int `json:"cols"`
	// Faces: a tile is four 16x16 faces (top left, top right, bottom
	// left, bottom right), each row-major: the device's TILE layout.
	Faces string `json:"faces"`
}

// Function is one func.func: its DRAM buffers and the kernels it runs in
// order.
type Function struct {
	Name     string   `json:"name"`
	Buffers  []Buffer `json:"buffers"`
	Launches []Launch `json:"launches"`
	// Checks are what the inputs' extents must satisfy before the first
	// launch (the function's loop.ExtentChecks): a host refuses inputs
	// that break one, as no kernel checks.
	Checks []loop.NamedExtentCheck `json:"extent_checks,omitempty"`
}

// Buffer is a DRAM buffer of tiles: an argument of the function (role
// "input" or "output") or an intermediate between two kernels.
//
// Layout "rows" views a tensor [d0, ..., dk] as the matrix
// [d0*...*d(k-1), dk] (a 1-D tensor is one row, a scalar [1, 1]) padded to
// whole tiles, tiles row-major; layout "column" views it as [d0*...*dk, 1],
// one value per row in column 0, which is how per-row results ([R] with
// R not ending in 1) are kept: the layout of reduce_tile's REDUCE_ROW
// result. Padding is zero on the way in and ignored on the way out.
type Buffer struct {
	Name       string `json:"name"`
	Role       string `json:"role"`
	DType      string `json:"dtype"`
	Shape      []Expr `json:"shape"`
	Layout     string `json:"layout"`
	DataFormat string `json:"data_format"`
	PageBytes  int64  `json:"page_bytes"`
}

// Launch runs a kernel on buffers of the function, in the kernel's
// parameter order.
type Launch struct {
	Kernel  string   `json:"kernel"`
	Buffers []string `json:"buffers"`
}

// Expr is an extent: a constant, an axis of a buffer, or an operation on
// extents ("mul", "add", "sub", "div", "rem", "min"). In JSON a constant
// is a number, an axis {"buffer": "x", "axis": 0}, an operation
// {"op": "mul", "args": [...]}.
type Expr struct {
	Const  *int64
	Buffer string
	Axis   int
	Op     string
	Args   []Expr
}

// exprJSON is the JSON object form of a non-constant Expr.
type exprJSON struct {
	Buffer string `json:"buffer,omitempty"`
	Axis   *int   `json:"axis,omitempty"`
	Op     string `json:"op,omitempty"`
	Args   []Expr `json:"args,omitempty"`
}

// MarshalJSON writes a constant as a number, anything else as an object.
func (e Expr) MarshalJSON() ([]byte, error) {
	if e.Const != nil {
		return json.Marshal(*e.Const)
	}
	if e.Op != "" {
		return json.Marshal(exprJSON{Op: e.Op, Args: e.Args})
	}
	axis := e.Axis
	return json.Marshal(exprJSON{Buffer: e.Buffer, Axis: &axis})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (e *Expr) UnmarshalJSON(data []byte) error {
	var n int64
	if err := json.Unmarshal(data, &n); err == nil {
		*e = constExpr(n)
		return nil
	}
	var o exprJSON
	if err := json.Unmarshal(data, &o); err != nil {
		return err
	}
	*e = Expr{Buffer: o.Buffer, Op: o.Op, Args: o.Args}
	if o.Axis != nil {
		e.Axis = *o.Axis
	}
	return nil
}

func constExpr(n int64) Expr { return Expr{Const: &n} }

// String spells the expression: 4096, dim(x, 0), dim(x, 0) * 64.
func (e Expr) String() string {
	switch {
	case e.Const != nil:
		return fmt.Sprint(*e.Const)
	case e.Op != "":
		parts := make([]string, len(e.Args))
		for i, a := range e.Args {
			parts[i] = a.String()
		}
		return e.Op + "(" + strings.Join(parts, ", ") + ")"
	}
	return fmt.Sprintf("dim(%s, %d)", e.Buffer, e.Axis)
}

// Eval computes the extent given the shapes of named buffers.
func (e Expr) Eval(shape func(buffer string, axis int) (int64, error)) (int64, error) {
	switch {
	case e.Const != nil:
		return *e.Const, nil
	case e.Op == "":
		return shape(e.Buffer, e.Axis)
	}
	vals := make([]int64, len(e.Args))
	for i, a := range e.Args {
		v, err := a.Eval(shape)
		if err != nil {
			return 0, err
		}
		vals[i] = v
	}
	if len(vals) != 2 {
		return 0, fmt.Errorf("extent %s: %s takes two operands", e, e.Op)
	}
	a, b := vals[0], vals[1]
	switch e.Op {
	case "mul":
		return a * b, nil
	case "add":
		return a + b, nil
	case "sub":
		return a - b, nil
	case "min":
		return min(a, b), nil
	case "div", "rem":
		if b == 0 {
			return 0, fmt.Errorf("extent %s divides by zero", e)
		}
		if e.Op == "div" {
			return a / b, nil
		}
		return a % b, nil
	}
	return 0, fmt.Errorf("extent %s: unknown operation %q", e, e.Op)
}

// Kernel is one loop.kernel: three kernels sharing circular buffers on
// every core of the grid that gets work.
type Kernel struct {
	Name string `json:"name"`
	// Kind is the loop.kernel kind: "row" or "elementwise", or
	// "transpose" for the generic kernel of a transpose.
	Kind     string  `json:"kind"`
	Schedule string  `json:"schedule,omitempty"`
	Params   []Param `json:"params"`
	// Rows and Cols are the iteration space [R, C]: R rows (the product of
	// the leading extents), C elements per row.
	Rows Expr `json:"rows"`
	Cols Expr `json:"cols"`
	Work Work `json:"work"`
	// CircularBuffers are placed in L1 one after the other from L1Offset 0
	// of the kernel's share; L1Bytes is their sum, checked against the L1
	// of a core.
	CircularBuffers []CircularBuffer `json:"circular_buffers"`
	L1Bytes         int64            `json:"l1_bytes"`
	Reader          KernelFile       `json:"reader"`
	Compute         KernelFile       `json:"compute"`
	Writer          KernelFile       `json:"writer"`
	ComputeConfig   ComputeConfig    `json:"compute_config"`
}

// Param is a buffer parameter of a kernel and how the kernel reads it:
// "full" (a tile per (row block, column tile)), "row" (a row broadcast
// down the rows: a weight [C]), "col" (one value per row), "scalar".
//
// RowMap, for an operand broadcast over a leading dimension, is the row
// of the buffer (in its layout's matrix) that row r of the kernel reads, a
// C expression of r ("r / 10u"; over run-time extents, the variables
// extent_<param>_<axis> of the reader's runtime arguments, "r %
// extent_y_2"): the reader gathers those rows into tiles.
type Param struct {
	Name   string `json:"name"`
	Role   string `json:"role"`
	DType  string `json:"dtype"`
	Access string `json:"access"`
	Layout string `json:"layout"`
	RowMap string `json:"row_map,omitempty"`
}

// Work says how the kernel's work is split: Units of work ("row_block":
// 32 rows, all Ct tiles of each; "tile": one tile) numbered 0..Count-1,
// Count = ceil(R/32) or ceil(R/32)*ceil(C/32); core i of the Cores used
// takes a contiguous range, the first Count % Cores cores one unit more
// (tt-metal's split_work_to_cores).
type Work struct {
	Unit  string `json:"unit"`
	Count string `json:"count"`
	Split string `json:"split"`
}

// CircularBuffer is one CB of the kernel, the same on every core.
type CircularBuffer struct {
	Index      int    `json:"index"`
	Name       string `json:"name"`
	DataFormat string `json:"data_format"`
	PageBytes  int64  `json:"page_bytes"`
	Pages      int64  `json:"pages"`
	L1Offset   int64  `json:"l1_offset"`
	Purpose    string `json:"purpose"`
}

// KernelFile is one of the three kernels: its source (relative to the
// output directory), where it runs, and its arguments by name.
//
// Compile-time arguments are "accessor:<param>" (that buffer's
// TensorAccessorArgs, appended with TensorAccessorArgs(buffer).append_to);
// runtime arguments are "addr:<param>" (the buffer's DRAM address),
// "unit_start", "unit_count" (this core's share of Work) and "Ct" (tiles
// per row, ceil(C/32)); a reader that gathers rows over run-time extents
// takes after them "R" (the kernel's rows, Kernel.Rows, when they are
// `?`) and "extent:<param>:<axis>" (that parameter's extent along axis)
// for each run-time extent its row maps read.
type KernelFile struct {
	Path        string   `json:"path"`
	Processor   string   `json:"processor"`
	CompileArgs []string `json:"compile_args"`
	RuntimeArgs []string `json:"runtime_args"`
}

// ComputeConfig is the ComputeConfig of the compute kernel.
// UnpackToDestFp32 lists the circular buffers whose unpack_to_dest_mode
// is UnpackToDestMode::UnpackToDestFp32 (the others Default): Float32
// tiles that must reach DST with all 32 bits, as a transpose's input.
type ComputeConfig struct {
	MathFidelity     string `json:"math_fidelity"`
	Fp32DestAccEn    bool   `json:"fp32_dest_acc_en"`
	MathApproxMode   bool   `json:"math_approx_mode"`
	UnpackToDestFp32 []int  `json:"unpack_to_dest_fp32,omitempty"`
}
