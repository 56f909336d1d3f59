package validator

import (
	"encoding/json"

	"pluginhost/jsonschema"
)

// Problem codes of capability schemas (the safe JSON Schema subset); the
// rules are package jsonschema's.
const (
	CodeSchemaKeyword = jsonschema.CodeSchemaKeyword
	CodeSchemaRef     = jsonschema.CodeSchemaRef
	CodeSchemaPattern = jsonschema.CodeSchemaPattern
	CodeSchemaInvalid = jsonschema.CodeSchemaInvalid
	CodeSchemaDepth   = jsonschema.CodeSchemaDepth
	CodeSchemaSize    = jsonschema.CodeSchemaSize
	CodeSchemaRoot    = jsonschema.CodeSchemaRoot
)

// checkSchema checks a schema of the safe subset and returns it read as far
// as it could be.
func (c *checker) checkSchema(path string, v any, root jsonschema.Root) *jsonschema.Schema {
	return jsonschema.Read(path, v, root, c.problem)
}

// parseSchema reads a capability schema for static checks. It returns nil
// when the schema is absent or breaks a rule of the subset: such a schema was
// reported when the manifest was checked, and is not used to judge configs.
func parseSchema(raw json.RawMessage) *jsonschema.Schema {
	if len(raw) == 0 {
		return nil
	}
	s, err := jsonschema.Compile(raw, jsonschema.ObjectRoot)
	if err != nil {
		return nil
	}
	return s
}
