// Command odsgen writes a dialect's generated Go code and reference docs
// from its ods declarations. Each dialect package runs it through
// `go generate`:
//
//	//go:generate go run ../odsgen -dialect graph
//
// which writes gen_ops.go into the package directory and
// docs/dialects/graph.md under the module root. A new dialect needs one
// entry in the dialects table below.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	graphdefs "github.com/tensorforge/tensorforge/dialects/graph/defs"
	loopdefs "github.com/tensorforge/tensorforge/dialects/loop/defs"
	"github.com/tensorforge/tensorforge/dialects/ods"
	"github.com/tensorforge/tensorforge/dialects/ods/gen"
)

// dialects lists what odsgen can generate: the declarations and the Go
// package name of the generated file.
var dialects = []struct {
	decl *ods.DialectDecl
	pkg  string
}{
	{&graphdefs.Dialect, "graph"},
	{&loopdefs.Dialect, "loop"},
}

func main() {
	name := flag.String("dialect", "", "the dialect to generate (graph, loop)")
	goOut := flag.String("go", "gen_ops.go", "the Go file to write")
	docOut := flag.String("doc", "", "the Markdown file to write (default docs/dialects/DIALECT.md under the module root)")
	flag.Parse()
	if err := run(*name, *goOut, *docOut); err != nil {
		fmt.Fprintln(os.Stderr, "odsgen:", err)
		os.Exit(1)
	}
}

func run(name, goOut, docOut string) error {
	for _, d := range dialects {
		if d.decl.Name != name {
			continue
		}
		if docOut == "" {
			root, err := moduleRoot()
			if err != nil {
				return err
			}
			docOut = filepath.Join(root, "docs", "dialects", name+".md")
		}
		src, err := gen.GoFile(d.decl, d.pkg)
		if err != nil {
			return err
		}
		doc, err := gen.Markdown(d.decl)
		if err != nil {
			return err
		}
		if err := os.WriteFile(goOut, src, 0o644); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(docOut), 0o755); err != nil {
			return err
		}
		return os.WriteFile(docOut, doc, 0o644)
	}
	return fmt.Errorf("unknown dialect %q", name)
}

// moduleRoot finds the directory holding go.mod, from the working directory up.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
