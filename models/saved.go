package models

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// SavedEntitiesNamespace holds the items the AI saves or marks as favourites.
// It is ordinary Plugin Local Storage: there is no separate copy.
const SavedEntitiesNamespace = "saved_entities"

// Bounds of saved entity fields that the specification leaves open.
const (
	MaxEntityTypeLength        = 64
	MaxEntityTitleLength       = 200
	MaxEntitySubtitleLength    = 200
	MaxEntityDescriptionLength = 4000
	MaxEntityURLLength         = 2048
	MaxEntityDataBytes         = 16 * 1024 // data as compact JSON
	MaxEntityDataDepth         = 8         // nesting of data
	MaxEntityDataEntries       = 64        // members of each object, elements of each list
)

// SavedEntityValue is the value of an item of the saved_entities namespace.
type SavedEntityValue struct {
	Type             string `json:"type"`
	Title            string `json:"title"`
	Subtitle         string `json:"subtitle,omitempty"`
	Description      string `json:"description,omitempty"`
	URL              string `json:"url,omitempty"`
	ImageURL         string `json:"image_url,omitempty"`
	Favorite         *bool  `json:"favorite,omitempty"`
	Data             JSON   `json:"data,omitempty"`
	SourceCapability string `json:"source_capability,omitempty"`
}

// ValidateSavedEntity checks a saved entity value: an object with the
// required type and title, the optional subtitle, description, url and
// image_url (HTTPS), favorite (boolean), data (bounded JSON) and
// source_capability (a capability id), and no other field.
func ValidateSavedEntity(v []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(v, &m); err != nil || m == nil {
		return Errorf(ErrInvalid, "a saved entity is a JSON object with type and title")
	}
	str := func(field string, required bool, max int) (string, error) {
		raw, ok := m[field]
		if !ok {
			if required {
				return "", Errorf(ErrInvalid, "saved entity: %s is required", field)
			}
			return "", nil
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", Errorf(ErrInvalid, "saved entity: %s must be a string", field)
		}
		if required && strings.TrimSpace(s) == "" {
			return "", Errorf(ErrInvalid, "saved entity: %s must not be empty", field)
		}
		if n := utf8.RuneCountInString(s); n > max {
			return "", Errorf(ErrInvalid, "saved entity: %s has %d characters; at most %d are allowed", field, n, max)
		}
		return s, nil
	}
	for field := range m {
		switch field {
		case "type", "title", "subtitle", "description", "url", "image_url", "favorite", "data", "source_capability":
		default:
			return Errorf(ErrInvalid, "saved entity: unknown field %q; allowed: type, title, subtitle, description, url, image_url, favorite, data, source_capability", field)
		}
	}
	typ, err := str("type", true, MaxEntityTypeLength)
	if err != nil {
		return err
	}
	for _, r := range typ {
		if unicode.IsControl(r) {
			return Errorf(ErrInvalid, "saved entity: type may not contain control characters")
		}
	}
	if _, err := str("title", true, MaxEntityTitleLength); err != nil {
		return err
	}
	if _, err := str("subtitle", false, MaxEntitySubtitleLength); err != nil {
		return err
	}
	if _, err := str("description", false, MaxEntityDescriptionLength); err != nil {
		return err
	}
	for _, field := range []string{"url", "image_url"} {
		s, err := str(field, false, MaxEntityURLLength)
		if err != nil {
			return err
		}
		if _, given := m[field]; given {
			if err := checkHTTPS(field, s); err != nil {
				return err
			}
		}
	}
	if raw, ok := m["favorite"]; ok {
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return Errorf(ErrInvalid, "saved entity: favorite must be a boolean")
		}
	}
	if raw, ok := m["data"]; ok {
		if err := checkEntityData(raw); err != nil {
			return err
		}
	}
	if s, err := str("source_capability", false, 128); err != nil {
		return err
	} else if _, given := m["source_capability"]; given && !IsDottedIdentifier(s) {
		return Errorf(ErrInvalid, "saved entity: source_capability %q is not a capability id (safe identifiers joined by dots, such as weather.lookup)", s)
	}
	return nil
}

func checkHTTPS(field, s string) error {
	u, err := url.Parse(s)
	if err != nil || !u.IsAbs() {
		return Errorf(ErrInvalid, "saved entity: %s must be an absolute https URL", field)
	}
	if !strings.EqualFold(u.Scheme, "https") {
		return Errorf(ErrInvalid, "saved entity: %s must use https, not %s", field, u.Scheme)
	}
	if u.Host == "" || u.User != nil {
		return Errorf(ErrInvalid, "saved entity: %s must name a host and no user information", field)
	}
	return nil
}

// checkEntityData bounds the data field: size, depth and entries.
func checkEntityData(raw json.RawMessage) error {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err == nil && buf.Len() > MaxEntityDataBytes {
		return Errorf(ErrInvalid, "saved entity: data has %d bytes as compact JSON; at most %d are allowed", buf.Len(), MaxEntityDataBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return Errorf(ErrInvalid, "saved entity: data is not valid JSON")
	}
	return CheckValueBounds("saved entity: data", v, MaxEntityDataDepth, MaxEntityDataEntries)
}

// CheckValueBounds checks the nesting and width of a decoded JSON value: a
// scalar nests 0 deep, [] and {} 1; each object or list holds at most
// maxEntries. what names the value in the PLUGIN_STORAGE_INVALID error.
func CheckValueBounds(what string, v any, maxDepth, maxEntries int) error {
	return checkBounds(what, v, 0, maxDepth, maxEntries)
}

func checkBounds(what string, v any, depth, maxDepth, maxEntries int) error {
	var children []any
	switch x := v.(type) {
	case map[string]any:
		for _, c := range x {
			children = append(children, c)
		}
	case []any:
		children = x
	default:
		return nil
	}
	if depth+1 > maxDepth {
		return Errorf(ErrInvalid, "%s nests deeper than %d levels", what, maxDepth)
	}
	if len(children) > maxEntries {
		return Errorf(ErrInvalid, "%s: an object or list in it has %d entries; at most %d are allowed", what, len(children), maxEntries)
	}
	for _, c := range children {
		if err := checkBounds(what, c, depth+1, maxDepth, maxEntries); err != nil {
			return err
		}
	}
	return nil
}
