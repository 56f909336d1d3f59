package models

import (
	"bytes"
	"encoding/json"
	"io"
)

// JSON is a JSON document held as compact, valid UTF-8 JSON text.
// It is the GraphQL scalar JSON.
type JSON []byte

// MarshalGQL writes the document; an empty JSON is null.
func (j JSON) MarshalGQL(w io.Writer) {
	if len(j) == 0 {
		io.WriteString(w, "null")
		return
	}
	w.Write(j)
}

// UnmarshalGQL takes a value decoded by the GraphQL layer.
func (j *JSON) UnmarshalGQL(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return Errorf(ErrInvalid, "not a JSON value: %v", err)
	}
	*j = b
	return nil
}

// MarshalJSON returns the document itself.
func (j JSON) MarshalJSON() ([]byte, error) {
	if len(j) == 0 {
		return []byte("null"), nil
	}
	return j, nil
}

// UnmarshalJSON keeps a compact copy of the document.
func (j *JSON) UnmarshalJSON(b []byte) error {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return err
	}
	*j = buf.Bytes()
	return nil
}
