package ods

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/tensorforge/tensorforge/ir"
)

// CamelCase turns a snake_case declaration name into a Go identifier:
// "reduce_sum" -> "ReduceSum", "zero_point" -> "ZeroPoint".
func CamelCase(name string) string {
	var sb strings.Builder
	for _, part := range strings.Split(name, "_") {
		if part == "" {
			continue
		}
		sb.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return sb.String()
}

// Ident is the Go identifier of the op: "Add", "ReduceSum", "RMSNorm".
func (o *OpDecl) Ident() string {
	if o.GoName != "" {
		return o.GoName
	}
	return CamelCase(o.Name)
}

// FullName is the op name with its dialect prefix: "graph.add".
func (d *DialectDecl) FullName(o *OpDecl) string { return d.Name + "." + o.Name }

// Class returns the class called name.
func (d *DialectDecl) Class(name string) (ClassDecl, bool) {
	for _, c := range d.Classes {
		if c.Name == name {
			return c, true
		}
	}
	return ClassDecl{}, false
}

// operationMethods are the methods of *ir.Operation: typed wrappers embed
// it, so an accessor with one of these names would hide the method.
var operationMethods = func() map[string]bool {
	m := map[string]bool{"Operation": true, "Attrs": true, "Loc": true}
	t := reflect.TypeOf(&ir.Operation{})
	for i := 0; i < t.NumMethod(); i++ {
		m[t.Method(i).Name] = true
	}
	return m
}()

// Validate checks the declarations for mistakes the generator would
// otherwise turn into code that does not compile or misbehaves.
func (d *DialectDecl) Validate() error {
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if !ir.IsIdentifier(d.Name) {
		fail("dialect name %q is not an identifier", d.Name)
	}
	classes := map[string]bool{}
	for _, c := range d.Classes {
		if classes[c.Name] {
			fail("class %s declared twice", c.Name)
		}
		classes[c.Name] = true
	}
	ops := map[string]bool{}
	for i := range d.Ops {
		o := &d.Ops[i]
		where := d.FullName(o)
		if ops[o.Name] {
			fail("%s declared twice", where)
		}
		ops[o.Name] = true
		if o.Summary == "" || o.Example == "" {
			fail("%s needs a summary and an example", where)
		}
		if !classes[o.Class] {
			fail("%s refers to undeclared class %q", where, o.Class)
		}
		if !strings.Contains(o.Example, where) {
			fail("%s: the example does not use the op", where)
		}
		validateOp(o, where, fail)
	}
	if len(errs) > 0 {
		return fmt.Errorf("ods: %s", strings.Join(errs, "; "))
	}
	return nil
}

func validateOp(o *OpDecl, where string, fail func(string, ...any)) {
	// accessor names live in one method set with the embedded *ir.Operation
	names := map[string]string{}
	claim := func(decl, what string) {
		goName := CamelCase(decl)
		switch {
		case !ir.IsIdentifier(decl) || strings.ContainsAny(decl, ".$"):
			fail("%s: %s name %q is not a snake_case identifier", where, what, decl)
		case operationMethods[goName]:
			fail("%s: %s %q would hide ir.Operation.%s", where, what, decl, goName)
		case names[goName] != "":
			fail("%s: %s %q and %s share the accessor name %s", where, what, decl, names[goName], goName)
		}
		names[goName] = what + " " + decl
	}
	for i, od := range o.Operands {
		claim(od.Name, "operand")
		if !od.Constraint.valid() {
			fail("%s: operand %s has no constraint", where, od.Name)
		}
		last := i == len(o.Operands)-1
		if od.Variadic && (!last || od.Optional) {
			fail("%s: only the last operand may be variadic (and then not optional)", where)
		}
		if i > 0 && o.Operands[i-1].Optional && !od.Optional {
			fail("%s: optional operands must come last", where)
		}
		if od.Omissible && !od.Optional {
			fail("%s: operand %s is omissible but not optional", where, od.Name)
		}
		if i > 0 && o.Operands[i-1].Omissible && !od.Omissible {
			fail("%s: operand %s follows an omissible operand, so it must be omissible too", where, od.Name)
		}
		if od.Omissible && (i == 0 || !o.Operands[i-1].Optional) {
			fail("%s: operand %s is omissible, but no optional operand comes before it (make it optional alone)", where, od.Name)
		}
	}
	for _, r := range o.Results {
		claim(r.Name, "result")
		if !r.Constraint.valid() {
			fail("%s: result %s has no constraint", where, r.Name)
		}
		if r.Variadic && len(o.Results) != 1 {
			fail("%s: a variadic result must be the only result", where)
		}
	}
	for _, a := range o.Attrs {
		claim(a.Name, "attribute")
		if !a.Kind.valid() {
			fail("%s: attribute %s has no kind", where, a.Name)
		}
		if a.Default != nil {
			if !defaultMatches(a.Default, a.Kind) {
				fail("%s: default of attribute %s is a %T, not %s", where, a.Name, a.Default, a.Kind.GoType())
			}
			if a.Optional {
				fail("%s: attribute %s has a default, so it is optional already", where, a.Name)
			}
		}
		if len(a.Enum) > 0 {
			if a.Kind != StringKind {
				fail("%s: attribute %s has values listed but is not a string", where, a.Name)
			}
			if s, ok := a.Default.(string); ok && !slices.Contains(a.Enum, s) {
				fail("%s: default %q of attribute %s is not one of its values", where, s, a.Name)
			}
		}
	}
	for _, r := range o.Regions {
		if r.Name == "" {
			fail("%s: a region needs a name", where)
		}
	}
	if len(o.Regions) > 0 && !o.CustomBuilder {
		fail("%s: ops with regions need a hand-written builder (CustomBuilder)", where)
	}
}

func defaultMatches(v any, k AttrKind) bool {
	switch v.(type) {
	case int64:
		return k == IntKind
	case float64:
		return k == FloatKind
	case bool:
		return k == BoolKind
	case string:
		return k == StringKind
	}
	return false
}
