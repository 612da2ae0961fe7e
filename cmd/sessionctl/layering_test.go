package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestImportsNoInternalPackage: the CLI is a thin shell over the public
// library (DESIGN.md): none of its non-test files, in package main or in
// the CLI's own packages beside it, imports an internal package (the
// module's internal/ tree or any other), so everything it does a Go
// program can do.
func TestImportsNoInternalPackage(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && name == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		for _, imp := range f.Imports {
			ip, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(ip, "github.com/agentstore/sessionstore/") && slices.Contains(strings.Split(ip, "/"), "internal") {
				t.Errorf("%s imports %s", path, ip)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 20 {
		t.Fatalf("read %d files: the walk missed the CLI's sources", files)
	}
}
