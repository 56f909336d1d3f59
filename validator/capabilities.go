package validator

import (
	"strings"

	"pluginhost/models"
)

// Capability kinds and extension points of the contract.
var (
	capabilityKinds = []string{"tool", "skill", "background", "data"}
	extensionPoints = []string{"screen", "home", "response"}
)

// capabilities checks the capabilities array.
func (c *checker) capabilities(v any) {
	a, ok := c.array("/capabilities", v)
	if !ok {
		return
	}
	ids := map[string]bool{}
	for i, e := range a {
		p := ptr("/capabilities", i)
		m := c.object(p, e, "id", "kind", "description", "input_schema", "output_schema")
		if m == nil {
			continue
		}
		if iv, ok := m["id"]; !ok {
			c.errorf(ptr(p, "id"), CodeRequired, "capability id is required")
		} else if id, ok := c.str(ptr(p, "id"), iv); ok {
			switch {
			case !models.IsDottedIdentifier(id):
				c.errorf(ptr(p, "id"), CodeFormat, "%q is not a capability id: safe identifiers joined by dots, such as weather.lookup", id)
			case strings.HasPrefix(id, "host."):
				c.errorf(ptr(p, "id"), CodeFormat, "%q: capability ids under host. are provided by the host", id)
			case ids[id]:
				c.errorf(ptr(p, "id"), CodeDuplicate, "capability %q is declared more than once", id)
			}
			ids[id] = true
		}
		if kv, ok := m["kind"]; !ok {
			c.errorf(ptr(p, "kind"), CodeRequired, "kind is required: %s", strings.Join(capabilityKinds, ", "))
		} else {
			c.enum(ptr(p, "kind"), kv, capabilityKinds...)
		}
		if dv, ok := m["description"]; ok {
			c.str(ptr(p, "description"), dv)
		}
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
		p := ptr("/extensions", i)
		m := c.object(p, e, "id", "point", "config")
		if m == nil {
			continue
		}
		if iv, ok := m["id"]; !ok {
			c.errorf(ptr(p, "id"), CodeRequired, "extension id is required")
		} else if id, ok := c.str(ptr(p, "id"), iv); ok {
			switch {
			case !models.IsSafeIdentifier(id):
				c.errorf(ptr(p, "id"), CodeFormat, "%q is not a safe identifier", id)
			case ids[id]:
				c.errorf(ptr(p, "id"), CodeDuplicate, "extension %q is declared more than once", id)
			}
			ids[id] = true
		}
		if pv, ok := m["point"]; !ok {
			c.errorf(ptr(p, "point"), CodeRequired, "point is required: %s", strings.Join(extensionPoints, ", "))
		} else {
			c.enum(ptr(p, "point"), pv, extensionPoints...)
		}
		if cv, ok := m["config"]; ok {
			if s, ok := c.str(ptr(p, "config"), cv); ok && !strings.HasPrefix(s, "ui/") {
				c.errorf(ptr(p, "config"), CodeFormat, "%q: a UI config lives at ui/<extension>.json", s)
			}
		}
	}
}
