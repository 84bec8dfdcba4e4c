package gen

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/ods"
	"github.com/tensorforge/tensorforge/ir"
)

// Markdown returns the reference page of dialect d, laid out as MLIR's
// generated dialect docs: per op its syntax, summary, description,
// traits, verification class, attributes, operands, results and regions.
func Markdown(d *ods.DialectDecl) ([]byte, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	var w bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&w, format, args...) }
	p("<!-- %s -->\n\n", Header)
	p("# '%s' Dialect\n\n", d.Name)
	p("%s\n\n", sentence(d.Summary))
	if d.Description != "" {
		p("%s\n\n", strings.TrimSpace(d.Description))
	}

	p("## Operations\n\n")
	p("| Op | Summary |\n| -- | ------- |\n")
	for i := range d.Ops {
		p("| `%s` | %s |\n", d.FullName(&d.Ops[i]), d.Ops[i].Summary)
	}
	p("\n")

	for i := range d.Ops {
		o := &d.Ops[i]
		p("### `%s` (%s.%sOp)\n\n", d.FullName(o), d.Name, o.Ident())
		p("_%s_\n\n", o.Summary)
		p("Syntax:\n\n```\n%s\n```\n\n", strings.TrimSpace(o.Example))
		if o.Description != "" {
			p("%s\n\n", strings.TrimSpace(o.Description))
		}
		if names := traitNames(o.Traits); len(names) > 0 {
			p("Traits: `%s`\n\n", strings.Join(names, "`, `"))
		}
		class, _ := d.Class(o.Class)
		p("Verification: class [`%s`](#%s)", class.Name, strings.ToLower(class.Name))
		if class.Infers {
			p(", which infers the result type")
		}
		p(".\n\n")

		if len(o.Attrs) > 0 || o.OtherAttrs {
			p("#### Attributes:\n\n")
			if len(o.Attrs) > 0 {
				p("| Attribute | Kind | Default | Description |\n| --------- | ---- | ------- | ----------- |\n")
				for _, a := range o.Attrs {
					p("| `%s` | %s | %s | %s |\n", a.Name, attrKindDoc(a), attrDefaultDoc(a), cell(a.Doc))
				}
				p("\n")
			}
			if o.OtherAttrs {
				p("Other attributes are allowed and kept.\n\n")
			}
		}
		if len(o.Operands) > 0 {
			p("#### Operands:\n\n| Operand | Description |\n| :-----: | ----------- |\n")
			for _, od := range o.Operands {
				desc := od.Constraint.Summary()
				switch {
				case od.Variadic:
					desc = "variadic of " + desc
				case od.Omissible:
					desc = "optional (may be left out alone) " + desc
				case od.Optional:
					desc = "optional " + desc
				}
				p("| `%s` | %s |\n", od.Name, withDoc(desc, od.Doc))
			}
			p("\n")
		}
		if len(o.Results) > 0 {
			p("#### Results:\n\n| Result | Description |\n| :----: | ----------- |\n")
			for _, r := range o.Results {
				desc := r.Constraint.Summary()
				if r.Variadic {
					desc = "variadic of " + desc
				}
				p("| `%s` | %s |\n", r.Name, withDoc(desc, r.Doc))
			}
			p("\n")
		}
		if len(o.Regions) > 0 {
			p("#### Regions:\n\n| Region | Description |\n| :----: | ----------- |\n")
			for _, r := range o.Regions {
				p("| `%s` | %s |\n", r.Name, cell(r.Doc))
			}
			p("\n")
		}
	}

	if len(d.Classes) > 0 {
		p("## Verification classes\n\n")
		p("Every op is first checked against its declaration: operand, result and region\n")
		p("counts, operand and result types, and the kinds of its attributes (unknown ones\n")
		p("are errors). Then the rules of its class apply.\n\n")
		for _, c := range d.Classes {
			p("### `%s`\n\n%s\n\n", c.Name, strings.TrimSpace(c.Doc))
		}
	}
	return append(bytes.TrimRight(w.Bytes(), "\n"), '\n'), nil
}

func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || strings.HasSuffix(s, ".") {
		return s
	}
	return s + "."
}

// cell makes text fit in one Markdown table cell.
func cell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "|", `\|`)
}

func withDoc(desc, doc string) string {
	if doc == "" {
		return desc
	}
	return desc + ": " + cell(doc)
}

func traitNames(t ir.Trait) []string {
	var names []string
	for _, tn := range ir.TraitNames {
		if t&tn.Trait != 0 {
			names = append(names, tn.Name)
		}
	}
	return names
}

func attrKindDoc(a ods.AttrDecl) string {
	if len(a.Enum) == 0 {
		return a.Kind.String()
	}
	quoted := make([]string, len(a.Enum))
	for i, e := range a.Enum {
		quoted[i] = "`" + ir.Quote(e) + "`"
	}
	return "string: " + strings.Join(quoted, ", ")
}

func attrDefaultDoc(a ods.AttrDecl) string {
	switch {
	case a.Default != nil:
		return "`" + TextDefault(a.Default) + "`"
	case a.Optional:
		return "optional"
	}
	return "required"
}
