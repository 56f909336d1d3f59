package validator

import (
	"fmt"

	"pluginhost/jsonschema"
	"pluginhost/models"
)

// The standard storage tools' schemas. Spec, Standard storage tools: list
// (namespace, query, limit), get (namespace, key), create (namespace, key,
// value), update (namespace, key, value, revision), delete (namespace, key,
// revision); results are ExtensionResult, whose data holds namespace and item,
// or items and has_more for list. These schemas let data sources, invoke
// actions and bindings to host.storage.* be checked like declared
// capabilities.
const (
	storageKey       = `{"type": "string", "minLength": 1, "maxLength": 80}`
	storageNamespace = `{"type": "string", "minLength": 1, "maxLength": 64}`
	storageRevision  = `{"type": "integer", "minimum": 1}`
	storageItem      = `{"type": "object", "properties": {
		"key": {"type": "string"}, "value": {}, "revision": {"type": "integer", "minimum": 1},
		"created_at": {"type": "string", "format": "date-time"}, "updated_at": {"type": "string", "format": "date-time"}}}`
	storageItemData = `{"type": "object", "properties": {"namespace": {"type": "string"}, "item": ` + storageItem + `}}`
)

var storageToolSchemas = map[string][2]string{
	models.ToolList: {
		`{"type": "object", "additionalProperties": false, "properties": {"namespace": ` + storageNamespace + `,
			"query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1, "maximum": 100}, "cursor": {"type": "string"}}}`,
		`{"type": "object", "properties": {"namespace": {"type": "string"}, "items": {"type": "array", "items": ` + storageItem + `},
			"has_more": {"type": "boolean"}, "next_cursor": {"type": "string"}}}`,
	},
	models.ToolGet: {
		`{"type": "object", "additionalProperties": false, "required": ["key"], "properties": {"namespace": ` + storageNamespace + `, "key": ` + storageKey + `}}`,
		storageItemData,
	},
	models.ToolCreate: {
		`{"type": "object", "additionalProperties": false, "required": ["key", "value"], "properties": {"namespace": ` + storageNamespace + `, "key": ` + storageKey + `, "value": {}}}`,
		storageItemData,
	},
	models.ToolUpdate: {
		`{"type": "object", "additionalProperties": false, "required": ["key", "value", "revision"], "properties": {"namespace": ` + storageNamespace + `, "key": ` + storageKey + `, "value": {}, "revision": ` + storageRevision + `}}`,
		storageItemData,
	},
	models.ToolDelete: {
		`{"type": "object", "additionalProperties": false, "required": ["key", "revision"], "properties": {"namespace": ` + storageNamespace + `, "key": ` + storageKey + `, "revision": ` + storageRevision + `}}`,
		storageItemData,
	},
}

// capInfo is a capability a config may use, with its parsed schemas (nil
// when absent or outside the subset).
type capInfo struct {
	id     string
	input  *jsonschema.Schema
	output *jsonschema.Schema
}

// storageTools are the parsed schemas of the standard storage tools.
var storageTools = func() map[string]*capInfo {
	out := map[string]*capInfo{}
	for _, id := range models.StorageTools {
		s := storageToolSchemas[id]
		in, outS := parseSchema([]byte(s[0])), parseSchema([]byte(s[1]))
		if in == nil || outS == nil {
			panic(fmt.Sprintf("validator: the built-in schema of %s is not in the safe subset", id))
		}
		out[id] = &capInfo{id: id, input: in, output: outS}
	}
	return out
}()
