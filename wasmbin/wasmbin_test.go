package wasmbin_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"pluginhost/internal/wasmtest"
	"pluginhost/wasmbin"
)

// A Go-built module reads, and what Encode writes reads back the same.
func TestParseEncode(t *testing.T) {
	for name, wasm := range map[string][]byte{
		"go command":  wasmtest.Module(t, "../sandbox/testdata/modules", "echo"),
		"go reactor":  wasmtest.Reactor(t, "../sandbox/testdata/reactors", "echo"),
		"hand-made":   wasmtest.TableGrowLoop(10, true),
		"no sections": {0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00},
	} {
		t.Run(name, func(t *testing.T) {
			m, err := wasmbin.Parse(wasm, wasmbin.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			again, err := wasmbin.Parse(m.Encode(), wasmbin.Limits{})
			if err != nil {
				t.Fatalf("what Encode wrote does not read: %v", err)
			}
			if !reflect.DeepEqual(strip(m), strip(again)) {
				t.Fatal("what Encode wrote reads back differently")
			}
		})
	}
}

// strip drops the byte offsets that differ between an input and its
// re-encoding.
func strip(m *wasmbin.Module) any {
	code := make([][]byte, len(m.Code))
	for i, b := range m.Code {
		code[i] = b.Code
	}
	return []any{m.Types, m.Imports, m.Funcs, m.Tables, m.Memories, m.Globals, m.Exports, m.Start, m.Elements, m.Data, code}
}

// Each structural limit holds at the limit and refuses one past it, naming
// the limit; each rule of the host refuses what breaks it.
func TestCheck(t *testing.T) {
	header := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	echo := wasmtest.Module(t, "../sandbox/testdata/modules", "echo")
	small := wasmbin.Limits{MaxNesting: 8, MaxBlocks: 20, MaxLocalsTimesBlocks: 1000, MaxTableElements: 100, MaxSegmentElements: 50, MemoryBytes: 4 * wasmbin.PageBytes}
	for _, tt := range []struct {
		name   string
		wasm   []byte
		limits wasmbin.Limits
		want   string // a part of the error; empty: it passes
	}{
		{"a Go command", echo, wasmbin.Limits{}, ""},
		{"a Go reactor", wasmtest.Reactor(t, "../sandbox/testdata/reactors", "echo"), wasmbin.Limits{}, ""},
		{"truncated", echo[:len(echo)/2], wasmbin.Limits{}, "not a valid WebAssembly module"},
		{"not WebAssembly", []byte("hello, world"), wasmbin.Limits{}, "does not start with"},
		{"version 2", []byte{0x00, 0x61, 0x73, 0x6d, 0x02, 0x00, 0x00, 0x00}, wasmbin.Limits{}, "version 1"},
		{"unknown section", append(append([]byte{}, header...), 99, 0), wasmbin.Limits{}, "unknown section id 99"},
		{"imports env.f", append(append([]byte{}, header...), 1, 4, 1, 0x60, 0, 0, 2, 9, 1, 3, 'e', 'n', 'v', 1, 'f', 0, 0), wasmbin.Limits{}, "imports env.f"},
		{"no entry", header, wasmbin.Limits{}, "exports neither _start nor pluginhost_run"},
		{"nesting at the limit", wasmtest.NestedBlocks(8), small, ""},
		{"nesting past the limit", wasmtest.NestedBlocks(9), small, "nesting of blocks is 9; the host's limit is 8"},
		{"blocks at the limit", wasmtest.LiveLocals(0, 20), small, ""},
		{"blocks past the limit", wasmtest.LiveLocals(0, 21), small, "blocks of a function is 21"},
		{"locals times blocks at the limit", wasmtest.LiveLocals(99, 10), small, ""},
		{"locals times blocks past the limit", wasmtest.LiveLocals(100, 10), small, "locals times blocks of a function is 1010"},
		{"memory at the limit", wasmtest.BigMemory(4, false), small, ""},
		{"memory past the limit", wasmtest.BigMemory(5, false), small, "memory an instance starts with, in bytes is 327680"},
		{"a growing table at the limit", wasmtest.TableGrowLoop(100, true), small, ""},
		{"a growing table past the limit", wasmtest.TableGrowLoop(101, true), small, "elements the tables may hold is 101"},
		{"a growing table without a maximum", wasmtest.TableGrowLoop(0, false), small, "has no maximum"},
		{"element segments at the limit", wasmtest.BulkLoop("table.init", wasmbin.PageBytes, 0, 100, 50), small, ""},
		{"element segments past the limit", wasmtest.BulkLoop("table.init", wasmbin.PageBytes, 0, 100, 51), small, "elements of a segment is 51; the host's limit is 50"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := wasmbin.Check(tt.wasm, tt.limits)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got %v, want an error with %q", err, tt.want)
			}
			var le *wasmbin.LimitError
			if strings.Contains(tt.want, "limit is") && !errors.As(err, &le) {
				t.Errorf("the error %v is not a LimitError", err)
			}
		})
	}
}

// What Check learns: a Go command, a Go reactor, their memory and whether an
// instance can be restored.
func TestFacts(t *testing.T) {
	type row struct {
		name       string
		wasm       []byte
		kind       string
		restorable bool
	}
	var tests []row
	for _, tt := range []row{
		{"go command", wasmtest.Module(t, "../sandbox/testdata/modules", "echo"), wasmbin.KindCommand, true},
		{"go reactor", wasmtest.Reactor(t, "../sandbox/testdata/reactors", "echo"), wasmbin.KindReactor, true},
		{"a table that grows", wasmtest.TableGrowLoop(10, true), wasmbin.KindCommand, false},
	} {
		tests = append(tests, tt)
	}
	// Only a module whose code changes no table and drops no segment can
	// be restored by writing back its memory and globals.
	for _, kind := range wasmtest.StateKinds {
		tests = append(tests, row{"a reactor that changes its " + kind, wasmtest.StateReactor(kind), wasmbin.KindReactor, wasmtest.Restorable(kind)})
	}
	for _, tt := range tests {
		_, f, err := wasmbin.Check(tt.wasm, wasmbin.Limits{})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if f.Kind != tt.kind || f.Restorable != tt.restorable {
			t.Errorf("%s: kind %s restorable %v, want %s %v", tt.name, f.Kind, f.Restorable, tt.kind, tt.restorable)
		}
	}
}

// The instrumented module reads, imports yield after the module's own
// imports, and exports the host's globals; every call of a defined function
// moved up by one index.
func TestInstrument(t *testing.T) {
	wasm := wasmtest.Recursion()
	m, _, err := wasmbin.Check(wasm, wasmbin.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Instrument(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	im, err := wasmbin.Parse(out, wasmbin.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(im.Imports); n != 1 || im.Imports[0].Module != wasmbin.YieldModule || im.Imports[0].Name != wasmbin.YieldName {
		t.Fatalf("imports %+v", im.Imports)
	}
	for _, name := range []string{wasmbin.StackExport, wasmbin.FuelExport} {
		if _, ok := im.Export(name); !ok {
			t.Errorf("no export %s", name)
		}
	}
	start, _ := im.Export("_start")
	if start.Index != 1 {
		t.Errorf("_start is function %d, want 1 (after the yield import)", start.Index)
	}
	// The first function's call of the second (index 1) now calls index 2.
	if !strings.Contains(string(im.Code[0].Code), string([]byte{0x10, 0x02})) {
		t.Errorf("the call was not renumbered: % x", im.Code[0].Code)
	}
	// A frame heavier than the budget is refused.
	if _, err := m.Instrument(32); err == nil || !strings.Contains(err.Error(), "stack weight of one frame") {
		t.Errorf("a budget below one frame: %v", err)
	}
}
