package validator

import (
	"encoding/json"
	"testing"

	"pluginhost/internal/wasmtest"
)

// A capability that runs names a module of the plugin that the host can run,
// and only a background capability has a schedule, of 30 to 86400 seconds.
func TestCapabilityModules(t *testing.T) {
	echo := wasmtest.Module(t, "../sandbox/testdata/modules", "echo")
	noStart := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00} // an empty module: no _start
	tests := []struct {
		name       string
		capability map[string]any
		files      map[string][]byte
		code, path string // "" path: valid
	}{
		{"a tool with its module", map[string]any{"kind": "tool", "module": "capabilities/a.wasm"},
			map[string][]byte{"capabilities/a.wasm": echo}, "", ""},
		{"a module that is not in the folder", map[string]any{"kind": "tool", "module": "capabilities/a.wasm"},
			nil, CodeMissingFile, "/capabilities/0/module"},
		{"a module that is not WebAssembly", map[string]any{"kind": "tool", "module": "capabilities/a.wasm"},
			map[string][]byte{"capabilities/a.wasm": []byte("#!/bin/sh\necho hi\n")}, CodeInvalidModule, "/capabilities/0/module"},
		{"a module without _start", map[string]any{"kind": "tool", "module": "capabilities/a.wasm"},
			map[string][]byte{"capabilities/a.wasm": noStart}, CodeInvalidModule, "/capabilities/0/module"},
		{"a module path that is not .wasm", map[string]any{"kind": "tool", "module": "capabilities/a.js"},
			map[string][]byte{"capabilities/a.js": echo}, CodeFormat, "/capabilities/0/module"},
		{"a module path with ..", map[string]any{"kind": "tool", "module": "../a.wasm"},
			nil, CodeFormat, "/capabilities/0/module"},
		{"a background every 30 s", map[string]any{"kind": "background", "module": "capabilities/a.wasm", "schedule_seconds": 30},
			map[string][]byte{"capabilities/a.wasm": echo}, "", ""},
		{"a background every 86400 s", map[string]any{"kind": "background", "module": "capabilities/a.wasm", "schedule_seconds": 86400},
			map[string][]byte{"capabilities/a.wasm": echo}, "", ""},
		{"a background every 29 s", map[string]any{"kind": "background", "module": "capabilities/a.wasm", "schedule_seconds": 29},
			map[string][]byte{"capabilities/a.wasm": echo}, CodeRange, "/capabilities/0/schedule_seconds"},
		{"a background every 86401 s", map[string]any{"kind": "background", "module": "capabilities/a.wasm", "schedule_seconds": 86401},
			map[string][]byte{"capabilities/a.wasm": echo}, CodeRange, "/capabilities/0/schedule_seconds"},
		{"a schedule on a tool", map[string]any{"kind": "tool", "module": "capabilities/a.wasm", "schedule_seconds": 60},
			map[string][]byte{"capabilities/a.wasm": echo}, CodeScheduleKind, "/capabilities/0/schedule_seconds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := map[string]any{"id": "notes.run", "description": "runs"}
			for k, v := range tt.capability {
				c[k] = v
			}
			manifest, _ := json.Marshal(map[string]any{
				"id": "com.example.run", "name": "Run", "version": "1.0.0", "schema_version": 2,
				"permissions": []string{}, "capabilities": []any{c},
			})
			files := map[string][]byte{ManifestFile: manifest}
			for p, b := range tt.files {
				files[p] = b
			}
			m, r := CheckPlugin(files)
			if tt.code == "" {
				if !r.Valid || m == nil {
					t.Fatalf("refused: %+v", r.Errors)
				}
				return
			}
			for _, p := range r.Errors {
				if p.Code == tt.code && p.Path == tt.path {
					return
				}
			}
			t.Fatalf("want %s at %s; got %+v", tt.code, tt.path, r.Errors)
		})
	}
}

// The verdict on a module is remembered by its bytes: the same module gives
// the same verdict without a second check, another module is checked, and
// the memory is bounded.
func TestModuleVerdictsRemembered(t *testing.T) {
	echo := wasmtest.Module(t, "../sandbox/testdata/modules", "echo")
	bad := []byte("#!/bin/sh\necho hi\n")
	for range 2 {
		if err := checkModule(echo); err != nil {
			t.Fatalf("echo: %v", err)
		}
		if err := checkModule(bad); err == nil {
			t.Fatal("a shell script passed")
		}
	}
	if len(checkedModules.verdicts) == 0 {
		t.Fatal("no verdict remembered")
	}
	for i := range maxModuleVerdicts + 1 {
		checkModule(append([]byte("not a module "), byte(i)))
	}
	if n := len(checkedModules.verdicts); n > maxModuleVerdicts {
		t.Fatalf("%d verdicts remembered, at most %d", n, maxModuleVerdicts)
	}
	if err := checkModule(echo); err != nil {
		t.Fatalf("echo, after the memory was cleared: %v", err)
	}
}
