package preview

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"pluginhost/internal/testenv"
	"pluginhost/models"
)

// The corpora the Go rules and the JavaScript runtime both pass.
const (
	bindingCorpus = "../binding/testdata/conformance.json"
	keysCorpus    = "testdata/keys-conformance.json"
	storageCorpus = "testdata/storage-conformance.json"
	inputCorpus   = "testdata/input-conformance.json"
)

func readJSON(t *testing.T, file string, v any) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

type keysCorpusFile struct {
	Cases []struct {
		Key    string `json:"key"`
		Family string `json:"family"`
		Valid  bool   `json:"valid"`
	} `json:"cases"`
	Redaction []struct {
		Name  string `json:"name"`
		Value any    `json:"value"`
		Want  any    `json:"want"`
	} `json:"redaction"`
}

// TestKeysCorpusGo checks the key corpus against the Go rules of package
// models, so that the JavaScript runtime, which passes the same corpus, agrees
// with them.
func TestKeysCorpusGo(t *testing.T) {
	var c keysCorpusFile
	readJSON(t, keysCorpus, &c)
	if len(c.Cases) == 0 || len(c.Redaction) == 0 {
		t.Fatal("key corpus has an empty section")
	}
	for _, tc := range c.Cases {
		if got := models.CredentialFamily(tc.Key); got != tc.Family {
			t.Errorf("CredentialFamily(%q) = %q, corpus says %q", tc.Key, got, tc.Family)
		}
		if got := models.ValidateKey(tc.Key) == nil; got != tc.Valid {
			t.Errorf("ValidateKey(%q) valid = %v, corpus says %v", tc.Key, got, tc.Valid)
		}
	}
	// Redaction replaces exactly the members CredentialFamily names.
	var redact func(v any) any
	redact = func(v any) any {
		switch x := v.(type) {
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = redact(e)
			}
			return out
		case map[string]any:
			out := map[string]any{}
			for k, e := range x {
				if models.CredentialFamily(k) != "" {
					out[k] = "[redacted]"
				} else {
					out[k] = redact(e)
				}
			}
			return out
		}
		return v
	}
	for _, tc := range c.Redaction {
		if got := redact(tc.Value); !reflect.DeepEqual(got, tc.Want) {
			t.Errorf("%s: redacted %v, corpus says %v", tc.Name, got, tc.Want)
		}
	}
}

type inputCorpusFile struct {
	Cases []struct {
		Name      string          `json:"name"`
		Type      string          `json:"type"`
		Props     map[string]any  `json:"props"`
		Text      *string         `json:"text"`
		Value     any             `json:"value"`
		Committed json.RawMessage `json:"committed"`
		Want      []string        `json:"want"`
	} `json:"cases"`
}

// TestInputCorpusGo checks the input validation corpus against CheckInput and
// InputValue.
func TestInputCorpusGo(t *testing.T) {
	var c inputCorpusFile
	readJSON(t, inputCorpus, &c)
	if len(c.Cases) == 0 {
		t.Fatal("input corpus is empty")
	}
	for _, tc := range c.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			value := tc.Value
			if tc.Text != nil {
				value = InputValue(tc.Props, *tc.Text)
			}
			if tc.Committed != nil {
				var want any
				if err := json.Unmarshal(tc.Committed, &want); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(value, want) {
					t.Fatalf("committed %#v, want %#v", value, want)
				}
			}
			got := CheckInput(tc.Type, tc.Props, value)
			if len(got) == 0 && len(tc.Want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, tc.Want) {
				t.Fatalf("CheckInput = %v, want %v", got, tc.Want)
			}
		})
	}
}

// node returns the path of node, or skips (fails when services are required).
func node(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "node (the JavaScript conformance runner)")
	}
	return p
}

// corpusCounts returns how many cases each section of the runner's output
// must have passed, read from the corpora here.
func corpusCounts(t *testing.T) map[string]int {
	var b struct {
		Templates         []any `json:"templates"`
		InvalidTemplates  []any `json:"invalid_templates"`
		Conditions        []any `json:"conditions"`
		InvalidConditions []any `json:"invalid_conditions"`
	}
	readJSON(t, bindingCorpus, &b)
	var k keysCorpusFile
	readJSON(t, keysCorpus, &k)
	var s struct {
		Scenarios []struct {
			Steps []any `json:"steps"`
		} `json:"scenarios"`
	}
	readJSON(t, storageCorpus, &s)
	steps := 0
	for _, sc := range s.Scenarios {
		steps += len(sc.Steps)
	}
	var in inputCorpusFile
	readJSON(t, inputCorpus, &in)
	return map[string]int{
		"templates": len(b.Templates), "invalid_templates": len(b.InvalidTemplates),
		"conditions": len(b.Conditions), "invalid_conditions": len(b.InvalidConditions),
		"keys": len(k.Cases), "redaction": len(k.Redaction), "storage": steps, "input": len(in.Cases),
	}
}

// TestJSConformance runs assets/core.js under node against every corpus: the
// binding language of package binding, the storage key rules of package
// models, the storage tools of package storage, and the input rules. Each
// section must pass every case of its corpus.
func TestJSConformance(t *testing.T) {
	nodeBin := node(t)
	cmd := exec.Command(nodeBin, "testdata/conformance.js", filepath.Join("assets", "core.js"),
		bindingCorpus, keysCorpus, storageCorpus, inputCorpus)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var res map[string]struct {
		Passed   int               `json:"passed"`
		Failures []json.RawMessage `json:"failures"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("runner output: %v\n%s", err, out)
	}
	for section, want := range corpusCounts(t) {
		r, ok := res[section]
		if !ok {
			t.Errorf("%s: the runner did not report this section", section)
			continue
		}
		for _, f := range r.Failures {
			t.Errorf("%s: %s", section, f)
		}
		if r.Passed != want {
			t.Errorf("%s: %d cases passed, the corpus has %d", section, r.Passed, want)
		}
		t.Logf("%s: %d/%d cases pass in JavaScript", section, r.Passed, want)
	}
}

// TestModulesUnderNode runs the DOM-free unit tests of the runtime's
// modules under node: the host cache and its refresh rules
// (testdata/hostcache.test.mjs), and the web host's addresses and words
// (testdata/webhost.test.mjs).
func TestModulesUnderNode(t *testing.T) {
	for _, file := range []string{"hostcache.test.mjs", "webhost.test.mjs"} {
		t.Run(file, func(t *testing.T) {
			out, err := exec.Command(node(t), "--test", "--test-reporter=tap", filepath.Join("testdata", file)).CombinedOutput()
			if err != nil {
				t.Fatalf("node --test: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), "# fail 0") || strings.Contains(string(out), "# pass 0\n") {
				t.Fatalf("the tests did not all run and pass:\n%s", out)
			}
		})
	}
}
