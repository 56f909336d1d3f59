package validator_test

import (
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// problemCodes returns the values of every Code* string constant of the
// validator and binding packages.
func problemCodes(t *testing.T) map[string]string {
	t.Helper()
	codes := map[string]string{}
	for _, dir := range []string{".", "../binding"} {
		fset := token.NewFileSet()
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		var parsed []*ast.File
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(fset, f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			parsed = append(parsed, file)
		}
		// Type-check only the constant declarations' values: evaluate each
		// Code* constant with go/types, ignoring errors elsewhere.
		conf := types.Config{Importer: nil, Error: func(error) {}}
		info := &types.Info{Defs: map[*ast.Ident]types.Object{}}
		conf.Check(dir, fset, parsed, info)
		for id, obj := range info.Defs {
			c, ok := obj.(*types.Const)
			if !ok || !strings.HasPrefix(id.Name, "Code") || c.Val().Kind() != constant.String {
				continue
			}
			codes[constant.StringVal(c.Val())] = id.Name
		}
	}
	if len(codes) < 60 {
		t.Fatalf("found only %d codes", len(codes))
	}
	return codes
}

// TestEveryCodeIsDocumented keeps docs/validator.md in step with the codes.
func TestEveryCodeIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/validator.md")
	if err != nil {
		t.Fatal(err)
	}
	for code, name := range problemCodes(t) {
		if !strings.Contains(string(doc), "| `"+code+"` |") {
			t.Errorf("%s (%s) has no row in docs/validator.md", code, name)
		}
	}
}
