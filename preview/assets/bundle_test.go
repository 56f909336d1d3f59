package assets

import (
	"errors"
	"strings"
	"testing"
)

// Every entry bundles, each module once, after the modules it imports.
func TestEntriesBundle(t *testing.T) {
	for _, entry := range Entries {
		b := Bundle(entry)
		at := func(module string) int {
			t.Helper()
			marker := "// ---- " + module + "\n"
			if strings.Count(b, marker) != 1 {
				t.Fatalf("%s: %s is in the bundle %d times", entry, module, strings.Count(b, marker))
			}
			return strings.Index(b, marker)
		}
		if !(at("core.js") < at("hostcache.js") && at("hostcache.js") < at("runtime.js") && at("vdom.js") < at("runtime.js") && at("runtime.js") < at(entry)) {
			t.Fatalf("%s: modules out of order", entry)
		}
		if strings.Contains(b, "\nimport ") || strings.Contains(b, "\nexport ") {
			t.Fatalf("%s: an import or export is left in the bundle", entry)
		}
	}
}

// The bundle takes only the forms it knows, and says where another one is.
func TestBundleForms(t *testing.T) {
	sources := map[string]string{
		"a.js": "import { b, c } from './b.js';\nimport * as all from './b.js';\nexport function a() { return b + c + all.b; }\n",
		"b.js": "export var b = 1;\nexport const c = 2;\nvar hidden = 3;\n",
	}
	read := func(srcs map[string]string) func(string) (string, error) {
		return func(name string) (string, error) {
			s, ok := srcs[name]
			if !ok {
				return "", errors.New("no such module")
			}
			return s, nil
		}
	}
	got, err := bundle("a.js", read(sources))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"var b = module_b.b; var c = module_b.c;", "var all = module_b;", "return {b: b, c: c};", "return {a: a};"} {
		if !strings.Contains(got, want) {
			t.Fatalf("the bundle has no %q:\n%s", want, got)
		}
	}
	if strings.Index(got, "// ---- b.js") > strings.Index(got, "// ---- a.js") {
		t.Fatal("b.js comes after the module that imports it")
	}
	for _, tc := range []struct{ name, src, want string }{
		{"default export", "export default 1;\n", `a.js:1: "export default 1;" is not a form the bundle takes`},
		{"renamed import", "import { b as x } from './b.js';\n", `a.js:1: import of "b as x": only plain names are bundled`},
		{"import from a package", "import x from 'lib';\n", `a.js:1: "import x from 'lib';" is not a form the bundle takes`},
		{"export list", "var a = 1;\nexport { a };\n", `a.js:2: "export { a };" is not a form the bundle takes`},
		{"missing module", "import { z } from './z.js';\n", "a.js imports z.js: no such module"},
		{"cycle", "import { b } from './b.js';\n", "b.js imports a.js, which imports it back"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srcs := map[string]string{"a.js": tc.src, "b.js": "import { a } from './a.js';\nexport var b = 1;\n"}
			_, err := bundle("a.js", read(srcs))
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
