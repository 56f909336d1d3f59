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

// AppendJSONString appends s as json.Marshal writes a string: as it is when
// it is printable ASCII that needs no escape (", \, <, > and &), the usual
// case of ids and keys, and by json.Marshal otherwise.
func AppendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			out, _ := json.Marshal(s) // a string always encodes
			return append(b, out...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
