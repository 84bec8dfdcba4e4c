package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tensorforge/tensorforge/ir"
)

// flagKind says how a flag takes its value.
type flagKind uint8

const (
	// boolFlag is `-timing`, `-timing=true` or `-verify-each=false`; it never
	// takes the next argument as its value.
	boolFlag flagKind = iota
	// valueFlag needs a value: `-o out.tir`, `-o=out.tir`, `--target h100`.
	valueFlag
	// optionalValueFlag takes a value only after '=': `--fuse` or
	// `--fuse=max-ops=64`. Per-pass flags are of this kind.
	optionalValueFlag
)

// flagDef declares one flag of a flagSet.
type flagDef struct {
	name string // without dashes: "o", "print-ir-after", "O2"
	kind flagKind
	arg  string // placeholder of the value in help: "FILE"
	help string
	// set receives the value as written (booleans normalised to "true" or
	// "false"); hasValue is false for a bare `--fuse`.
	set func(value string, hasValue bool) error
}

// flagSet parses command lines the way mlir-opt users expect: `-flag` and
// `--flag` alike, values as `-flag=value` or `-flag value`, booleans as
// `-flag` or `-flag=false`. Flags and positional arguments may be mixed;
// `--` ends the flags, and a lone `-` is a positional argument (standard
// input).
type flagSet struct {
	defs  map[string]*flagDef
	order []*flagDef
	// dynamic, if set, is asked about names that are not declared (the
	// per-pass flags, which follow the pass registry).
	dynamic func(name string) *flagDef
	// dynamicNames lists the names dynamic answers, for suggestions.
	dynamicNames func() []string
}

func newFlagSet() *flagSet { return &flagSet{defs: map[string]*flagDef{}} }

// add declares a flag. Declaring a name twice is a programming error.
func (fs *flagSet) add(d *flagDef) {
	if _, dup := fs.defs[d.name]; dup {
		panic("tfc: flag declared twice: " + d.name)
	}
	fs.defs[d.name] = d
	fs.order = append(fs.order, d)
}

// boolVar declares `-name` / `-name=false`.
func (fs *flagSet) boolVar(p *bool, name, help string) {
	fs.add(&flagDef{name: name, kind: boolFlag, help: help, set: func(v string, _ bool) error {
		*p = v == "true"
		return nil
	}})
}

// stringVar declares `-name VALUE`; a later occurrence overrides an earlier one.
func (fs *flagSet) stringVar(p *string, name, arg, help string) {
	fs.add(&flagDef{name: name, kind: valueFlag, arg: arg, help: help, set: func(v string, _ bool) error {
		*p = v
		return nil
	}})
}

// listVar declares a repeatable `-name A,B`; every occurrence appends its
// comma-separated items.
func (fs *flagSet) listVar(p *[]string, name, arg, help string) {
	fs.add(&flagDef{name: name, kind: valueFlag, arg: arg, help: help, set: func(v string, _ bool) error {
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				*p = append(*p, item)
			}
		}
		return nil
	}})
}

// mlirPrefix starts mlir-opt's spellings of its flags
// (`--mlir-print-ir-after-all`, `--mlir-timing`): each is accepted as an
// alias of the flag without the prefix.
const mlirPrefix = "mlir-"

// mlirAliases are mlir-opt spellings whose name differs past the prefix.
var mlirAliases = map[string]string{
	"mlir-pass-pipeline-crash-reproducer": "crash-reproducer",
}

// lookup finds a declared or dynamic flag, or the flag an mlir-opt
// spelling stands for.
func (fs *flagSet) lookup(name string) *flagDef {
	if d := fs.lookupExact(name); d != nil {
		return d
	}
	if alias, ok := mlirAliases[name]; ok {
		return fs.lookupExact(alias)
	}
	if rest, ok := strings.CutPrefix(name, mlirPrefix); ok && rest != "" {
		return fs.lookupExact(rest)
	}
	return nil
}

func (fs *flagSet) lookupExact(name string) *flagDef {
	if d, ok := fs.defs[name]; ok {
		return d
	}
	if fs.dynamic != nil {
		return fs.dynamic(name)
	}
	return nil
}

// parse applies the flags in args in order and returns the positional
// arguments. The first problem is returned as an unlocated diagnostic.
func (fs *flagSet) parse(args []string) ([]string, *ir.Diagnostic) {
	var positional []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		if arg == "-" || !strings.HasPrefix(arg, "-") {
			positional = append(positional, arg)
			continue
		}
		spelled := arg // the flag as the user wrote it, for messages
		body := strings.TrimPrefix(strings.TrimPrefix(arg, "-"), "-")
		name, value, hasValue := strings.Cut(body, "=")
		if hasValue {
			spelled = arg[:len(arg)-len(value)-1]
		}
		d := fs.lookup(name)
		if d == nil || name == "" {
			return nil, unknownFlag(spelled, fs.suggest(name))
		}
		switch d.kind {
		case boolFlag:
			if !hasValue {
				value = "true"
			}
			b, ok := parseBool(value)
			if !ok {
				return nil, ir.Errorf(ir.Location{}, "flag '%s' takes true or false, not '%s'", spelled, value)
			}
			value = b
		case valueFlag:
			if !hasValue {
				if i+1 >= len(args) {
					return nil, ir.Errorf(ir.Location{}, "flag '%s' needs a value: %s=%s", spelled, spelled, d.arg)
				}
				i++
				value, hasValue = args[i], true
			}
		}
		if err := d.set(value, hasValue); err != nil {
			if diag, ok := err.(*ir.Diagnostic); ok {
				return nil, diag
			}
			return nil, ir.Errorf(ir.Location{}, "flag '%s' %v", spelled, err)
		}
	}
	return positional, nil
}

func parseBool(s string) (string, bool) {
	switch strings.ToLower(s) {
	case "true", "1", "on", "yes":
		return "true", true
	case "false", "0", "off", "no":
		return "false", true
	}
	return "", false
}

func unknownFlag(spelled, suggestion string) *ir.Diagnostic {
	if suggestion != "" {
		return ir.Errorf(ir.Location{}, "unknown flag '%s'; did you mean '--%s'? (see `tfc help`)", spelled, suggestion)
	}
	return ir.Errorf(ir.Location{}, "unknown flag '%s' (see `tfc help`)", spelled)
}

// suggest returns the known flag closest to a mistyped name, if one is close.
func (fs *flagSet) suggest(name string) string {
	if name == "" {
		return ""
	}
	names := make([]string, 0, len(fs.defs))
	for n := range fs.defs {
		names = append(names, n)
	}
	if fs.dynamicNames != nil {
		names = append(names, fs.dynamicNames()...)
	}
	sort.Strings(names) // ties go to the first name alphabetically
	limit := 1
	if len(name) >= 5 {
		limit = 2
	}
	best, bestDist := "", limit+1
	for _, n := range names {
		if d := editDistance(name, n); d < bestDist {
			best, bestDist = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// usage formats the declared flags for `tfc help`, in declaration order.
func (fs *flagSet) usage() string {
	var sb strings.Builder
	for _, d := range fs.order {
		spelling := "--" + d.name
		if len(d.name) <= 2 {
			spelling = "-" + d.name
		}
		switch d.kind {
		case valueFlag:
			if len(d.name) == 1 {
				spelling += " " + d.arg
			} else {
				spelling += "=" + d.arg
			}
		case optionalValueFlag:
			if d.arg != "" {
				spelling += "[=" + d.arg + "]"
			}
		}
		fmt.Fprintf(&sb, "  %-30s %s\n", spelling, d.help)
	}
	return sb.String()
}
