package storage

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"pluginhost/database"
	"pluginhost/models"
)

// Limits of list calls that the specification leaves open.
const (
	// DefaultListLimit is the list limit when a call omits it.
	DefaultListLimit = models.MaxListLimit
	// MaxListResponseBytes caps the accounted bytes (key + value) of one list
	// response; a response cut by it has has_more true. It always holds at least
	// one item.
	MaxListResponseBytes = 128 * 1024
	// MaxQueryLength bounds a list query, in characters.
	MaxQueryLength = 200
)

// itemJSON returns the JSON of models.ItemData for an item, byte for byte
// as json.Marshal writes it: every call on one item answers with it, so it
// is written directly when its value needs no escaping, and by json.Marshal
// otherwise.
func itemJSON(ns string, row database.ItemRow) models.JSON {
	b := make([]byte, 0, 128+len(ns)+len(row.Key)+len(row.Value))
	b = append(b, `{"namespace":`...)
	b = models.AppendJSONString(b, ns)
	b = append(b, `,"item":{"key":`...)
	b = models.AppendJSONString(b, row.Key)
	b = append(b, `,"value":`...)
	b, ok := appendPlainValue(b, row.Value)
	if !ok {
		return mustJSON(models.ItemData{Namespace: ns, Item: row.Model().Wire()})
	}
	b = append(b, `,"revision":`...)
	b = strconv.AppendInt(b, row.Revision, 10)
	b = append(b, `,"created_at":"`...)
	b = models.AppendTime(b, database.FromMicros(row.CreatedAt))
	b = append(b, `","updated_at":"`...)
	b = models.AppendTime(b, database.FromMicros(row.UpdatedAt))
	return append(b, `"}}`...)
}

// appendPlainValue appends a JSON value compacted, as json.Marshal writes
// models.JSON, unless it holds a character json.Marshal escapes (<, > and &,
// and U+2028 and U+2029, whose UTF-8 begins with 0xE2): then false.
func appendPlainValue(b []byte, v string) ([]byte, bool) {
	if len(v) == 0 {
		return append(b, "null"...), true
	}
	if strings.ContainsAny(v, "<>&\u2028\u2029") || !utf8.ValidString(v) {
		return b, false
	}
	buf := bytes.NewBuffer(b)
	if err := json.Compact(buf, []byte(v)); err != nil {
		return b, false
	}
	return buf.Bytes(), true
}

// checkValue validates a value and returns it as compact JSON: a string, finite
// number, boolean, null, object or list of at most 32 KiB of UTF-8 JSON.
func checkValue(v models.JSON) ([]byte, error) {
	if len(v) == 0 {
		return nil, models.Errorf(models.ErrInvalid, "value is required: a string, finite number, boolean, null, object or list")
	}
	if !utf8.Valid(v) {
		return nil, models.Errorf(models.ErrInvalid, "value is not valid UTF-8")
	}
	var buf bytes.Buffer
	buf.Grow(len(v))
	if err := json.Compact(&buf, v); err != nil {
		return nil, models.Errorf(models.ErrInvalid, "value is not valid JSON: %v", err)
	}
	out := buf.Bytes()
	if len(out) > models.MaxValueBytes {
		return nil, models.Errorf(models.ErrQuotaExceeded, "value has %d bytes of UTF-8 JSON; a value may have at most %d (32 KiB)", len(out), models.MaxValueBytes)
	}
	if err := checkNumbers(out); err != nil {
		return nil, err
	}
	return out, nil
}

// checkNumbers refuses numbers that are not finite as float64 (1e400).
func checkNumbers(v []byte) error {
	if !bytes.ContainsAny(v, "eE") {
		// Without an exponent, a JSON number needs over 300 digits to overflow.
		if len(v) < 300 {
			return nil
		}
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return models.Errorf(models.ErrInvalid, "value is not valid JSON: %v", err)
		}
		if n, ok := tok.(json.Number); ok {
			if f, err := strconv.ParseFloat(string(n), 64); err != nil || math.IsInf(f, 0) {
				return models.Errorf(models.ErrInvalid, "value holds the number %s, which is not a finite number", n)
			}
		}
	}
}

// itemSize is the accounted size of an item.
func itemSize(key string, value []byte) int64 { return int64(len(key) + len(value)) }

// checkReadKey validates the key of a read: the format rules only, since a
// credential name can never have been stored (reading one is NOT_FOUND).
func checkReadKey(key string) error { return models.ValidateKeyFormat(key) }

// encodeCursor and decodeCursor turn the last key of a page into an opaque
// continuation token and back.
func encodeCursor(key string) string { return base64.RawURLEncoding.EncodeToString([]byte(key)) }

func decodeCursor(c string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || !utf8.Valid(b) || utf8.RuneCount(b) > models.MaxKeyLength || len(b) == 0 {
		return "", models.Errorf(models.ErrInvalid, "cursor %q is not a cursor returned by host.storage.list", c)
	}
	return string(b), nil
}

// checkQuery validates a list query and returns its case-folded form.
func checkQuery(q string) (string, error) {
	if !utf8.ValidString(q) {
		return "", models.Errorf(models.ErrInvalid, "query is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(q); n > MaxQueryLength {
		return "", models.Errorf(models.ErrInvalid, "query has %d characters; at most %d are allowed", n, MaxQueryLength)
	}
	for _, r := range q {
		if r < 0x20 || r == 0x7f {
			return "", models.Errorf(models.ErrInvalid, "query may not contain control characters")
		}
	}
	return strings.ToLower(q), nil
}

// matches reports whether an item matches a folded query: the query is a
// case-insensitive substring of the key, of a string, number or boolean inside
// the value, or of an object member name inside the value.
func matches(key string, value []byte, folded string) bool {
	if folded == "" || strings.Contains(strings.ToLower(key), folded) {
		return true
	}
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var text string
		switch t := tok.(type) {
		case string:
			text = t
		case json.Number:
			text = string(t)
		case bool:
			text = strconv.FormatBool(t)
		default:
			continue
		}
		if strings.Contains(strings.ToLower(text), folded) {
			return true
		}
	}
}
