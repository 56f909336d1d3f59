package validator

import (
	"sync"

	"pluginhost/binding"
	"pluginhost/models"
	"pluginhost/uicatalog"
)

// maxInterned bounds the length of an interned string.
const maxInterned = 40

var (
	internOnce  sync.Once
	internTable map[string]any
)

// interned maps the names that configs and manifests are made of (members,
// node and action types, enum values, colour roles) to their decoded value,
// so that decoding them allocates nothing. Values are strings; they are
// boxed once here.
func interned() map[string]any {
	internOnce.Do(func() {
		t := map[string]any{}
		add := func(s string) {
			if len(s) <= maxInterned {
				t[s] = s
			}
		}
		var props func(ps []uicatalog.Prop)
		props = func(ps []uicatalog.Prop) {
			for _, p := range ps {
				add(p.Name)
				for _, v := range p.Values {
					add(v)
				}
				if d, ok := p.Default.(string); ok {
					add(d)
				}
				props(p.Members)
			}
		}
		c := uicatalog.Catalog()
		props(c.CommonProps)
		for _, n := range c.Nodes {
			add(n.Type)
			props(n.Props)
		}
		for _, a := range c.Actions {
			add(a.Type)
			props(a.Fields)
		}
		for _, ps := range [][]uicatalog.Prop{c.Config.TopLevel, c.Config.AppBar, c.Config.Navigation, c.Config.DataSource, c.Config.A2UI, c.Config.Theme, c.Config.NodeMembers} {
			props(ps)
		}
		for _, list := range [][]string{c.ColorRoles, c.Typography, models.StorageTools, manifestFields, knownPermissions, capabilityKinds, extensionPoints,
			{binding.OpEquals, binding.OpNotEquals, binding.OpExists, binding.OpAll, binding.OpAny, binding.OpNot, "path",
				"top", "right", "bottom", "left", "horizontal", "vertical", "value", "label", "",
				"namespace", "key", "limit", "query", "revision", "item", "items", "has_more",
				"properties", "required", "additionalProperties", "minimum", "maximum", "minLength", "maxLength", "enum", "format", "description", "title",
				"string", "number", "integer", "boolean", "object", "array", "null", "schema_version", "max_bytes", "ai_access", "namespaces", "version",
				"retain", "purge", "none", "read", "read_write", "input_schema", "output_schema", "config"}} {
			for _, s := range list {
				add(s)
			}
		}
		for _, w := range c.FontWeights {
			add(w.Name)
		}
		internTable = t
	})
	return internTable
}
