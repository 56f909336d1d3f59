package preview

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"pluginhost/models"
)

// Limits of a fixtures file.
const (
	// MaxFixturesBytes bounds the fixtures file: the page embeds it whole.
	MaxFixturesBytes = 1 << 20
	// MaxResponses bounds the canned responses of one capability.
	MaxResponses = 64
	// MaxDelayMS bounds a response's delay: long enough to see a loading
	// state, short enough that a forgotten delay does not look like a hang.
	MaxDelayMS = 60000
)

// Problem codes of fixtures files.
const (
	CodeFixtureJSON       = "json_syntax"
	CodeFixtureType       = "type"
	CodeFixtureUnknown    = "unknown_field"
	CodeFixtureRequired   = "required"
	CodeFixtureEnum       = "enum"
	CodeFixtureRange      = "range"
	CodeFixtureExclusive  = "exclusive"
	CodeFixtureDuplicate  = "duplicate"
	CodeFixtureTooLarge   = "too_large"
	CodeUnknownCapability = "unknown_capability"
	CodeStorageTool       = "storage_tool"
	CodeUnknownNamespace  = "unknown_namespace"
	CodeNoStorage         = "storage_permission"
	CodeInvalidKey        = "invalid_key"
	CodeQuota             = "quota"
	CodeUndeclaredState   = "undeclared_state_key"
	CodeUnknownPermission = "unknown_permission"
	CodeUnknownConnection = "unknown_connection"
	CodeConnectedDerived  = "connected_derived"
)

// FixturesError is a fixtures file that breaks a rule; Problems lists every
// problem with its JSON Pointer into the file.
type FixturesError struct {
	Problems []models.Problem
}

func (e *FixturesError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the fixtures file has %d problem(s):", len(e.Problems))
	for _, p := range e.Problems {
		path := p.Path
		if path == "" {
			path = "/"
		}
		fmt.Fprintf(&b, "\n  %s [%s] %s", path, p.Code, p.Message)
	}
	return b.String()
}

// fixtureScope is what a fixtures file is checked against.
type fixtureScope struct {
	manifest *models.Manifest // nil: capabilities and storage cannot be checked
	state    map[string]bool  // keys of the first screen's initial_state
}

type fixtureChecker struct {
	scope    fixtureScope
	problems []models.Problem
}

func (c *fixtureChecker) add(path, code, format string, args ...any) {
	c.problems = append(c.problems, models.Problem{Path: path, Code: code, Message: fmt.Sprintf(format, args...)})
}

func pointerToken(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// object checks that v is an object with only the allowed members.
func (c *fixtureChecker) object(path string, v any, allowed ...string) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		c.add(path, CodeFixtureType, "%s is an object, not %s", name(path), typeName(v))
		return nil, false
	}
	for _, k := range sortedKeys(m) {
		if k == "$comment" {
			continue
		}
		known := false
		for _, a := range allowed {
			known = known || a == k
		}
		if !known && allowed != nil {
			c.add(path+"/"+pointerToken(k), CodeFixtureUnknown, "unknown member %q; %s has %s", k, name(path), strings.Join(allowed, ", "))
		}
	}
	return m, true
}

func name(path string) string {
	if path == "" {
		return "the fixtures file"
	}
	return path
}

func (c *fixtureChecker) integer(path string, v any, lo, hi int64) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		c.add(path, CodeFixtureType, "%s is an integer, not %s", path, typeName(v))
		return 0, false
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		c.add(path, CodeFixtureType, "%s is an integer, not %s", path, n)
		return 0, false
	}
	if i < lo || i > hi {
		c.add(path, CodeFixtureRange, "%s is %d; it must be from %d to %d", path, i, lo, hi)
		return i, false
	}
	return i, true
}

// ParseFixtures checks a fixtures file (see docs/preview.md) against the
// plugin's manifest (nil when the preview has none) and the declared state
// keys of the first screen, and returns it decoded. Every problem is reported
// at once in a *FixturesError, each with its JSON Pointer.
func ParseFixtures(data []byte, m *models.Manifest, stateKeys map[string]bool) (map[string]any, error) {
	c := &fixtureChecker{scope: fixtureScope{manifest: m, state: stateKeys}}
	if len(data) > MaxFixturesBytes {
		c.add("", CodeFixtureTooLarge, "the fixtures file has %d bytes; at most %d are allowed", len(data), MaxFixturesBytes)
		return nil, &FixturesError{c.problems}
	}
	if !utf8.Valid(data) {
		c.add("", CodeFixtureJSON, "the fixtures file is not UTF-8")
		return nil, &FixturesError{c.problems}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		c.add("", CodeFixtureJSON, "the fixtures file is not JSON: %v", err)
		return nil, &FixturesError{c.problems}
	}
	if dec.More() {
		c.add("", CodeFixtureJSON, "the fixtures file holds more than one JSON value")
		return nil, &FixturesError{c.problems}
	}
	top, ok := c.object("", root, "capabilities", "storage", "context", "state", "response")
	if ok {
		if v, ok := top["capabilities"]; ok {
			c.capabilities("/capabilities", v)
		}
		if v, ok := top["storage"]; ok {
			c.storage("/storage", v)
		}
		if v, ok := top["context"]; ok {
			c.context("/context", v)
		}
		if v, ok := top["state"]; ok {
			c.state("/state", v)
		}
		if v, ok := top["response"]; ok {
			c.sampleResult("/response", v)
		}
	}
	if len(c.problems) > 0 {
		return nil, &FixturesError{c.problems}
	}
	contextConnections(top, m)
	return top, nil
}

func (c *fixtureChecker) capabilities(path string, v any) {
	caps, ok := c.object(path, v)
	if !ok {
		return
	}
	declared := map[string]bool{}
	if m := c.scope.manifest; m != nil {
		for _, cp := range m.Capabilities {
			declared[cp.ID] = true
		}
	}
	for _, id := range sortedKeys(caps) {
		if id == "$comment" {
			continue
		}
		p := path + "/" + pointerToken(id)
		if strings.HasPrefix(id, "host.storage.") {
			c.add(p, CodeStorageTool, "%s is answered by the preview's in-page store, not by fixtures; seed the store under /storage instead", id)
			continue
		}
		if c.scope.manifest != nil && !declared[id] {
			c.add(p, CodeUnknownCapability, "capability %q is not declared by the manifest", id)
		}
		list, ok := caps[id].([]any)
		if !ok {
			c.add(p, CodeFixtureType, "the responses of %s are an array, not %s", id, typeName(caps[id]))
			continue
		}
		if len(list) == 0 || len(list) > MaxResponses {
			c.add(p, CodeFixtureRange, "%s has %d responses; give 1 to %d", id, len(list), MaxResponses)
		}
		for i, r := range list {
			c.response(p+"/"+strconv.Itoa(i), r)
		}
	}
}

func (c *fixtureChecker) response(path string, v any) {
	r, ok := c.object(path, v, "match", "query", "result", "error", "delay_ms", "times")
	if !ok {
		return
	}
	if m, ok := r["match"]; ok {
		if _, ok := m.(map[string]any); !ok {
			c.add(path+"/match", CodeFixtureType, "match is an object of arguments the call must have, not %s", typeName(m))
		}
	}
	if q, ok := r["query"]; ok {
		if _, ok := q.(string); !ok && q != nil {
			c.add(path+"/query", CodeFixtureType, "query is the string the call's query must equal, or null, not %s", typeName(q))
		}
	}
	res, hasResult := r["result"]
	e, hasError := r["error"]
	switch {
	case hasResult && hasError:
		c.add(path, CodeFixtureExclusive, "a response has either result or error, not both")
	case !hasResult && !hasError:
		c.add(path+"/result", CodeFixtureRequired, "a response has result (an ExtensionResult) or error ({code, message})")
	case hasResult:
		if m, ok := c.object(path+"/result", res, "summary", "data", "evidence"); ok {
			if s, ok := m["summary"]; !ok {
				c.add(path+"/result/summary", CodeFixtureRequired, "an ExtensionResult has a summary string")
			} else if _, ok := s.(string); !ok {
				c.add(path+"/result/summary", CodeFixtureType, "summary is a string, not %s", typeName(s))
			}
			if d, ok := m["data"]; !ok {
				c.add(path+"/result/data", CodeFixtureRequired, "an ExtensionResult has a data object")
			} else if _, ok := d.(map[string]any); !ok {
				c.add(path+"/result/data", CodeFixtureType, "data is an object, not %s", typeName(d))
			}
			if ev, ok := m["evidence"]; ok {
				if _, ok := ev.([]any); !ok {
					c.add(path+"/result/evidence", CodeFixtureType, "evidence is an array, not %s", typeName(ev))
				}
			}
		}
	default:
		if m, ok := c.object(path+"/error", e, "code", "message"); ok {
			if s, ok := m["code"].(string); !ok || s == "" {
				c.add(path+"/error/code", CodeFixtureRequired, "an error has a non-empty code string, such as UPSTREAM_UNAVAILABLE")
			}
			if s, ok := m["message"]; ok {
				if _, ok := s.(string); !ok {
					c.add(path+"/error/message", CodeFixtureType, "message is a string, not %s", typeName(s))
				}
			}
		}
	}
	if d, ok := r["delay_ms"]; ok {
		c.integer(path+"/delay_ms", d, 0, MaxDelayMS)
	}
	if t, ok := r["times"]; ok {
		c.integer(path+"/times", t, 1, 1000)
	}
}

func (c *fixtureChecker) storage(path string, v any) {
	nss, ok := c.object(path, v)
	if !ok {
		return
	}
	m := c.scope.manifest
	var decl *models.StorageDecl
	if m != nil {
		decl = m.EffectiveStorage()
		if decl == nil {
			c.add(path, CodeNoStorage, "the plugin has no storage (the manifest does not request the storage permission); remove /storage")
			return
		}
	}
	var total int64
	for _, ns := range sortedKeys(nss) {
		if ns == "$comment" {
			continue
		}
		p := path + "/" + pointerToken(ns)
		maxBytes := int64(models.MaxNamespaceBytes)
		if decl != nil {
			d, ok := decl.Namespace(ns)
			if !ok {
				ids := make([]string, len(decl.Namespaces))
				for i, n := range decl.Namespaces {
					ids[i] = n.ID
				}
				c.add(p, CodeUnknownNamespace, "namespace %q is not declared by the manifest (declared: %s)", ns, strings.Join(ids, ", "))
				continue
			}
			maxBytes = int64(d.MaxBytes)
		}
		items, ok := nss[ns].([]any)
		if !ok {
			c.add(p, CodeFixtureType, "the items of namespace %s are an array of {key, value, revision}, not %s", ns, typeName(nss[ns]))
			continue
		}
		if len(items) > models.MaxKeysPerNamespace {
			c.add(p, CodeQuota, "namespace %s is seeded with %d keys; a namespace holds at most %d", ns, len(items), models.MaxKeysPerNamespace)
		}
		seen := map[string]bool{}
		var bytes int64
		for i, it := range items {
			ip := p + "/" + strconv.Itoa(i)
			obj, ok := c.object(ip, it, "key", "value", "revision")
			if !ok {
				continue
			}
			key, ok := obj["key"].(string)
			if !ok {
				c.add(ip+"/key", CodeFixtureRequired, "an item has a key string")
				continue
			}
			if err := models.ValidateKey(key); err != nil {
				c.add(ip+"/key", CodeInvalidKey, "%s", models.ErrorMessage(err))
			}
			if seen[key] {
				c.add(ip+"/key", CodeFixtureDuplicate, "key %q is seeded twice in namespace %s", key, ns)
			}
			seen[key] = true
			val, ok := obj["value"]
			if !ok {
				c.add(ip+"/value", CodeFixtureRequired, "an item has a value (any JSON, null included)")
				continue
			}
			compact, _ := json.Marshal(val)
			if len(compact) > models.MaxValueBytes {
				c.add(ip+"/value", CodeQuota, "the value has %d bytes of JSON; a value has at most %d", len(compact), models.MaxValueBytes)
			}
			if r, ok := obj["revision"]; ok {
				c.integer(ip+"/revision", r, 1, math.MaxInt32)
			}
			bytes += int64(len(key) + len(compact))
		}
		if bytes > maxBytes {
			c.add(p, CodeQuota, "namespace %s is seeded with %d bytes, over its max_bytes of %d (an item counts its key and its value as compact JSON)", ns, bytes, maxBytes)
		}
		total += bytes
	}
	if total > models.MaxInstallationBytes {
		c.add(path, CodeQuota, "the store is seeded with %d bytes, over the Installation's %d", total, models.MaxInstallationBytes)
	}
}

// Values the context of a fixtures file may take.
var (
	platforms   = []string{"android", "ios", "web", "macos", "windows", "linux"}
	sizeClasses = []string{"compact", "medium", "expanded"}
	modes       = []string{"light", "dark"}
	permissions = []string{models.PermissionStorage, models.PermissionAIStorage, models.PermissionNetwork}
)

func (c *fixtureChecker) enum(path string, v any, values []string) {
	s, ok := v.(string)
	if !ok {
		c.add(path, CodeFixtureType, "%s is a string, not %s", path, typeName(v))
		return
	}
	for _, x := range values {
		if x == s {
			return
		}
	}
	c.add(path, CodeFixtureEnum, "%s is %q; allowed values: %s", path, s, strings.Join(values, ", "))
}

func (c *fixtureChecker) booleans(path string, v any, names []string) {
	m, ok := c.object(path, v)
	if !ok {
		return
	}
	for _, k := range sortedKeys(m) {
		p := path + "/" + pointerToken(k)
		if names != nil {
			known := false
			for _, n := range names {
				known = known || n == k
			}
			if !known {
				c.add(p, CodeUnknownPermission, "%q is not a permission; permissions are %s", k, strings.Join(names, ", "))
				continue
			}
		}
		if _, ok := m[k].(bool); !ok {
			c.add(p, CodeFixtureType, "%s is true or false, not %s (only whether it is granted or connected, never a secret)", p, typeName(m[k]))
		}
	}
}

func (c *fixtureChecker) context(path string, v any) {
	m, ok := c.object(path, v, "platform", "permissions", "connections", "connected", "route", "screen", "theme")
	if !ok {
		return
	}
	if p, ok := m["platform"]; ok {
		c.enum(path+"/platform", p, platforms)
	}
	if p, ok := m["screen"]; ok {
		c.enum(path+"/screen", p, sizeClasses)
	}
	if p, ok := m["theme"]; ok {
		c.enum(path+"/theme", p, modes)
	}
	if p, ok := m["permissions"]; ok {
		c.booleans(path+"/permissions", p, permissions)
	}
	if p, ok := m["connections"]; ok {
		c.connections(path+"/connections", p)
	}
	if p, ok := m["connected"]; ok {
		if _, ok := p.(bool); !ok {
			c.add(path+"/connected", CodeFixtureType, "connected is true or false, not %s", typeName(p))
		} else if conns, _ := m["connections"].(map[string]any); len(conns) > 0 || (c.scope.manifest != nil && len(c.scope.manifest.Connections) > 0) {
			c.add(path+"/connected", CodeConnectedDerived, "context.connected is whether every declared connection is connected: set each one's connected under connections instead")
		}
	}
	if p, ok := m["route"]; ok {
		c.object(path+"/route", p)
	}
}

// connections checks the context's connections: each a connection the
// manifest declares, as {connected, label, account} (what bindings read;
// never a secret) or as true or false, short for {connected}.
func (c *fixtureChecker) connections(path string, v any) {
	m, ok := c.object(path, v)
	if !ok {
		return
	}
	for _, id := range sortedKeys(m) {
		p := path + "/" + pointerToken(id)
		if mm := c.scope.manifest; mm != nil && !slices.ContainsFunc(mm.Connections, func(x models.Connection) bool { return x.ID == id }) {
			c.add(p, CodeUnknownConnection, "%q is not a connection the manifest declares", id)
			continue
		}
		if _, ok := m[id].(bool); ok {
			continue
		}
		o, ok := m[id].(map[string]any)
		if !ok {
			c.add(p, CodeFixtureType, "%s is {connected, label, account}, or true or false, not %s (never a secret)", p, typeName(m[id]))
			continue
		}
		c.object(p, o, "connected", "label", "account")
		if x, ok := o["connected"]; !ok {
			c.add(p+"/connected", CodeFixtureRequired, "connected is required: true or false")
		} else if _, ok := x.(bool); !ok {
			c.add(p+"/connected", CodeFixtureType, "connected is true or false, not %s", typeName(x))
		}
		if x, ok := o["label"]; ok {
			if _, ok := x.(string); !ok {
				c.add(p+"/label", CodeFixtureType, "label is a string, not %s", typeName(x))
			}
		}
		if x, ok := o["account"]; ok && x != nil {
			if _, ok := x.(string); !ok {
				c.add(p+"/account", CodeFixtureType, "account is a string or null, not %s", typeName(x))
			}
		}
	}
}

// contextConnections gives the context of checked fixtures the
// connections as bindings read them, context.connections.<id> =
// {connected, label, account}: every connection the manifest declares
// (connected unless the fixtures say otherwise), and context.connected
// whether all of them are connected.
func contextConnections(top map[string]any, m *models.Manifest) {
	ctx, _ := top["context"].(map[string]any)
	given, _ := ctx["connections"].(map[string]any)
	if len(given) == 0 && (m == nil || len(m.Connections) == 0) {
		return
	}
	if ctx == nil {
		ctx = map[string]any{}
		top["context"] = ctx
	}
	out := map[string]any{}
	label := map[string]string{}
	if m != nil {
		for _, c := range m.Connections {
			label[c.ID] = c.Label
			out[c.ID] = map[string]any{"connected": true, "label": c.Label, "account": nil}
		}
	}
	for id, v := range given {
		conn := map[string]any{"connected": false, "label": id, "account": nil}
		if l, ok := label[id]; ok {
			conn["label"] = l
		}
		switch x := v.(type) {
		case bool:
			conn["connected"] = x
		case map[string]any:
			maps.Copy(conn, x)
		}
		out[id] = conn
	}
	all := true
	for _, v := range out {
		all = all && v.(map[string]any)["connected"] == true
	}
	ctx["connections"] = out
	ctx["connected"] = all
}

func (c *fixtureChecker) state(path string, v any) {
	m, ok := c.object(path, v)
	if !ok {
		return
	}
	for _, k := range sortedKeys(m) {
		if !c.scope.state[k] {
			declared := make([]string, 0, len(c.scope.state))
			for s := range c.scope.state {
				declared = append(declared, s)
			}
			sort.Strings(declared)
			list := strings.Join(declared, ", ")
			if list == "" {
				list = "none"
			}
			c.add(path+"/"+pointerToken(k), CodeUndeclaredState, "state key %q is not declared in the first screen's initial_state (declared: %s); only declared keys may be set", k, list)
		}
	}
}
