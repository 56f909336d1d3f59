package validator

import (
	"strings"

	"pluginhost/jsonschema"
	"pluginhost/models"
	"pluginhost/uicatalog"
)

// CodeMinHostVersion: a feature that needs min_host_version 1.7.12 is used
// while the manifest asks for an older host (or none).
const CodeMinHostVersion = "min_host_version"

// CodeConfigPath: an extension's config is not at ui/<extension>.json.
const CodeConfigPath = "config_path"

// Codes of capabilities that run.
const (
	// CodeInvalidModule: a capability's module is not a WebAssembly module
	// the host can run (a WASI preview 1 command exporting _start).
	CodeInvalidModule = "invalid_module"
	// CodeScheduleKind: schedule_seconds on a capability that is not a
	// background.
	CodeScheduleKind = "schedule_kind"
)

// Bounds of schedule_seconds (contract: "30 to 86400").
const (
	MinScheduleSeconds = 30
	MaxScheduleSeconds = 86400
)

// Capability kinds and extension points of the contract.
var (
	capabilityKinds = []string{models.KindTool, models.KindSkill, models.KindBackground, models.KindData}
	extensionPoints = []string{models.PointScreen, models.PointHome, models.PointResponse}
)

// capabilities checks the capabilities array. minHost is the manifest's
// min_host_version: capability schemas need 1.7.12 or later.
func (c *checker) capabilities(v any, minHost string) {
	a, ok := c.array("/capabilities", v)
	if !ok {
		return
	}
	versionReported := false
	ids := map[string]bool{}
	for i, e := range a {
		p := c.ptr("/capabilities", i)
		m := c.object(p, e, "id", "kind", "description", "input_schema", "output_schema", "module", "source", "schedule_seconds")
		if m == nil {
			continue
		}
		if iv, ok := m.get("id"); !ok {
			c.errorf(c.ptr(p, "id"), CodeRequired, "capability id is required")
		} else if id, ok := c.str(c.ptr(p, "id"), iv); ok {
			switch {
			case !models.IsDottedIdentifier(id):
				c.errorf(c.ptr(p, "id"), CodeFormat, "%q is not a capability id: safe identifiers joined by dots, such as weather.lookup", id)
			case strings.HasPrefix(id, "host."):
				c.errorf(c.ptr(p, "id"), CodeFormat, "%q: capability ids under host. are provided by the host", id)
			case ids[id]:
				c.errorf(c.ptr(p, "id"), CodeDuplicate, "capability %q is declared more than once", id)
			}
			ids[id] = true
		}
		if kv, ok := m.get("kind"); !ok {
			c.errorf(c.ptr(p, "kind"), CodeRequired, "kind is required: %s", strings.Join(capabilityKinds, ", "))
		} else {
			c.enum(c.ptr(p, "kind"), kv, capabilityKinds...)
		}
		if dv, ok := m.get("description"); ok {
			c.str(c.ptr(p, "description"), dv)
		}
		if mv, ok := m.get("module"); ok {
			if s, ok := c.str(c.ptr(p, "module"), mv); ok {
				c.modulePath(c.ptr(p, "module"), s)
			}
		}
		if sv, ok := m.get("source"); ok {
			if src, ok := c.str(c.ptr(p, "source"), sv); ok {
				switch {
				case !cleanRelative(src):
					c.errorf(c.ptr(p, "source"), CodeFormat, notCleanRelative, src)
				case !m.has("module"):
					c.errorf(c.ptr(p, "source"), CodeRequired, "a capability built from source (pluginhost build) names the module it builds: set module, such as capabilities/NAME.wasm")
				}
			}
		}
		if sv, ok := m.get("schedule_seconds"); ok {
			c.integer(c.ptr(p, "schedule_seconds"), sv, MinScheduleSeconds, MaxScheduleSeconds)
			if k, _ := m.val("kind").(string); k != models.KindBackground {
				c.errorf(c.ptr(p, "schedule_seconds"), CodeScheduleKind, "schedule_seconds is only for a background capability; this one is of kind %v", m.val("kind"))
			}
		}
		for _, k := range []string{"input_schema", "output_schema"} {
			sv, ok := m.get(k)
			if !ok {
				continue
			}
			c.checkSchema(c.ptr(p, k), sv, jsonschema.ObjectRoot)
			if !versionReported && !versionAtLeast(minHost, uicatalog.MinHostVersion) {
				versionReported = true
				have := minHost
				if have == "" {
					have = "not set"
				}
				c.errorf(c.ptr(p, k), CodeMinHostVersion, "this uses %s, a feature of host %s: set min_host_version to %s or later (it is %s)", uicatalog.FeatureCapabilitySchemas, uicatalog.MinHostVersion, uicatalog.MinHostVersion, have)
			}
		}
	}
}

// cleanRelative reports whether s is a clean relative path of the package:
// not empty, with no empty, . or .. segments, backslashes or colons.
func cleanRelative(s string) bool {
	if s == "" || strings.ContainsAny(s, "\\:") {
		return false
	}
	for _, seg := range strings.Split(s, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// notCleanRelative is the message for a path that is not cleanRelative.
const notCleanRelative = "%q is not a clean relative path: no empty, . or .. segments, backslashes or colons"

// modulePath checks the path of a capability's module: a clean relative
// .wasm path of the package, by convention capabilities/NAME.wasm.
func (c *checker) modulePath(path, s string) {
	switch {
	case !cleanRelative(s):
		c.errorf(path, CodeFormat, notCleanRelative, s)
	case !strings.HasSuffix(s, ".wasm"):
		c.errorf(path, CodeFormat, "%q: a capability module is a .wasm file, such as capabilities/NAME.wasm", s)
	case strings.HasPrefix(s, "ui/") || strings.HasPrefix(s, "META-INF/"):
		c.errorf(path, CodeFormat, "%q: a capability module lives outside ui/ and META-INF/, such as capabilities/NAME.wasm", s)
	}
}

// extensions checks the extensions array.
func (c *checker) extensions(v any) {
	a, ok := c.array("/extensions", v)
	if !ok {
		return
	}
	ids := map[string]bool{}
	for i, e := range a {
		p := c.ptr("/extensions", i)
		m := c.object(p, e, "id", "point", "config")
		if m == nil {
			continue
		}
		if iv, ok := m.get("id"); !ok {
			c.errorf(c.ptr(p, "id"), CodeRequired, "extension id is required")
		} else if id, ok := c.str(c.ptr(p, "id"), iv); ok {
			switch {
			case !models.IsSafeIdentifier(id):
				c.errorf(c.ptr(p, "id"), CodeFormat, "%q is not a safe identifier", id)
			case ids[id]:
				c.errorf(c.ptr(p, "id"), CodeDuplicate, "extension %q is declared more than once", id)
			}
			ids[id] = true
		}
		if pv, ok := m.get("point"); !ok {
			c.errorf(c.ptr(p, "point"), CodeRequired, "point is required: %s", strings.Join(extensionPoints, ", "))
		} else {
			c.enum(c.ptr(p, "point"), pv, extensionPoints...)
		}
		if cv, ok := m.get("config"); ok {
			if s, ok := c.str(c.ptr(p, "config"), cv); ok {
				c.configPath(c.ptr(p, "config"), s, m.val("id"))
			}
		}
	}
}

// configPath checks the path of an extension's UI config: a .json file under
// ui/, named after the extension by convention.
func (c *checker) configPath(path, s string, id any) {
	switch {
	case !strings.HasPrefix(s, "ui/"):
		c.errorf(path, CodeFormat, "%q: a UI config lives under ui/, as ui/<extension>.json", s)
	case !cleanRelative(s):
		c.errorf(path, CodeFormat, notCleanRelative, s)
	case !strings.HasSuffix(s, ".json"):
		c.errorf(path, CodeFormat, "%q: a UI config is a .json file", s)
	default:
		if ids, ok := id.(string); ok && s != "ui/"+ids+".json" {
			c.warnf(path, CodeConfigPath, "%q: by convention the config of extension %q is ui/%s.json", s, ids, ids)
		}
	}
}
