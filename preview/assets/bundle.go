package assets

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// The runtime's sources are ES modules (core.js, hostcache.js, vdom.js, ...),
// linted as modules, and tested under node as modules. A page runs them as
// one script, the bundle of an entry module: each module in its own function
// scope, after the modules it imports, so that the standalone preview is one
// self-contained file and the web host loads one cached file.
//
// A module may use only these forms, each on a line of its own:
//
//	import { a, b } from './x.js';
//	import * as x from './x.js';
//	export function f(...) / export var v = ... / export const c = ... / export class C
var (
	importNamed = regexp.MustCompile(`^import \{([^}]*)\} from '\./([a-z0-9-]+\.js)';$`)
	importAll   = regexp.MustCompile(`^import \* as ([A-Za-z_$][\w$]*) from '\./([a-z0-9-]+\.js)';$`)
	exported    = regexp.MustCompile(`^export (?:async )?(?:function\*? |var |let |const |class )([A-Za-z_$][\w$]*)`)
	identifier  = regexp.MustCompile(`^[A-Za-z_$][\w$]*$`)
)

// module is one parsed source.
type module struct {
	name    string
	body    []string // the source with its import lines dropped and export keywords taken off
	imports []string // the modules it imports, in order
	exports []string
}

// parseModule reads a module's source.
func parseModule(name, src string) (*module, error) {
	m := &module{name: name}
	for i, line := range strings.Split(src, "\n") {
		switch {
		case importNamed.MatchString(line):
			g := importNamed.FindStringSubmatch(line)
			var binds []string
			for _, n := range strings.Split(g[1], ",") {
				n = strings.TrimSpace(n)
				if !identifier.MatchString(n) {
					return nil, fmt.Errorf("%s:%d: import of %q: only plain names are bundled", name, i+1, n)
				}
				binds = append(binds, "var "+n+" = "+varName(g[2])+"."+n+";")
			}
			m.imports = append(m.imports, g[2])
			m.body = append(m.body, strings.Join(binds, " "))
		case importAll.MatchString(line):
			g := importAll.FindStringSubmatch(line)
			m.imports = append(m.imports, g[2])
			m.body = append(m.body, "var "+g[1]+" = "+varName(g[2])+";")
		case exported.MatchString(line):
			m.exports = append(m.exports, exported.FindStringSubmatch(line)[1])
			m.body = append(m.body, strings.TrimPrefix(line, "export "))
		case strings.HasPrefix(line, "import ") || strings.HasPrefix(line, "export "):
			return nil, fmt.Errorf("%s:%d: %q is not a form the bundle takes", name, i+1, line)
		default:
			m.body = append(m.body, line)
		}
	}
	return m, nil
}

// varName is the variable that holds a module's exports in a bundle.
func varName(file string) string {
	return "module_" + strings.NewReplacer("-", "_", ".js", "").Replace(file)
}

// bundle builds the script of an entry module; read returns a module's
// source.
func bundle(entry string, read func(name string) (string, error)) (string, error) {
	var order []*module
	state := map[string]int{} // 1: being visited, 2: done
	var visit func(name string, from string) error
	visit = func(name, from string) error {
		switch state[name] {
		case 1:
			return fmt.Errorf("%s imports %s, which imports it back", from, name)
		case 2:
			return nil
		}
		state[name] = 1
		src, err := read(name)
		if err != nil {
			return fmt.Errorf("%s imports %s: %w", from, name, err)
		}
		m, err := parseModule(name, src)
		if err != nil {
			return err
		}
		for _, dep := range m.imports {
			if err := visit(dep, name); err != nil {
				return err
			}
		}
		state[name] = 2
		order = append(order, m)
		return nil
	}
	if err := visit(entry, entry); err != nil {
		return "", err
	}
	var out strings.Builder
	out.WriteString("// The bundle of " + entry + " (package preview/assets): its ES modules, each in its own scope.\n")
	out.WriteString("(function () {\n'use strict';\n")
	for _, m := range order {
		out.WriteString("// ---- " + m.name + "\nvar " + varName(m.name) + " = (function () {\n")
		out.WriteString(strings.Join(m.body, "\n"))
		out.WriteString("\nreturn {")
		for i, e := range m.exports {
			if i > 0 {
				out.WriteString(", ")
			}
			out.WriteString(e + ": " + e)
		}
		out.WriteString("};\n})();\n")
	}
	out.WriteString("})();\n")
	return out.String(), nil
}

var bundles sync.Map // entry → string

// Bundle returns the script of an entry module ("preview-main.js",
// "shell.js") with every module it imports. It panics on a module that
// breaks the forms above: the sources are fixed at build time, and a test
// bundles every entry.
func Bundle(entry string) string {
	if b, ok := bundles.Load(entry); ok {
		return b.(string)
	}
	b, err := bundle(entry, func(name string) (string, error) {
		b, err := files.ReadFile(name)
		return string(b), err
	})
	if err != nil {
		panic("assets: " + err.Error())
	}
	bundles.Store(entry, b)
	return b
}

// Entries are the modules pages start from: the standalone preview's and the
// web host's.
var Entries = []string{"preview-main.js", "shell.js"}
