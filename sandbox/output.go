package sandbox

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"pluginhost/models"
)

// plainResult is the usual ExtensionResult a module writes, read without
// reflection: one object whose members are summary (a string), data and
// evidence, each at most once and spelled as they are. It reports false
// for anything else, which parseResult then reads with encoding/json and
// whose error it gives; what it reads, encoding/json reads the same way.
// compact says that data holds no white space outside its strings.
func plainResult(stdout []byte) (summary string, data json.RawMessage, evidence []models.Evidence, compact, ok bool) {
	b := stdout
	i := skipSpace(b, 0)
	if i == len(b) || b[i] != '{' {
		return
	}
	var seen [3]bool
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return // no summary: encoding/json's error
	}
	for {
		if i == len(b) || b[i] != '"' {
			return
		}
		nameEnd, _, good := skipValue(b, i, 0)
		if !good {
			return
		}
		name := b[i+1 : nameEnd-1]
		i = skipSpace(b, nameEnd)
		if i == len(b) || b[i] != ':' {
			return
		}
		start := skipSpace(b, i+1)
		end, spaced, good := skipValue(b, start, 0)
		if !good {
			return
		}
		value := b[start:end]
		switch string(name) {
		case "summary":
			if seen[0] || value[0] != '"' {
				return
			}
			seen[0] = true
			if summary, good = unquote(value); !good {
				return
			}
		case "data":
			if seen[1] {
				return
			}
			seen[1], data, compact = true, value, !spaced
		case "evidence":
			if seen[2] {
				return
			}
			seen[2] = true
			if string(value) != "[]" && json.Unmarshal(value, &evidence) != nil {
				return
			}
		default:
			return
		}
		i = skipSpace(b, end)
		if i == len(b) {
			return
		}
		if b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		if b[i] != '}' || !seen[0] || skipSpace(b, i+1) != len(b) {
			return
		}
		return summary, data, evidence, compact, true
	}
}

// unquote returns the string of a JSON string, as encoding/json decodes it.
func unquote(quoted []byte) (string, bool) {
	inner := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner), true
	}
	var s string
	return s, json.Unmarshal(quoted, &s) == nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// maxSkipDepth bounds the nesting skipValue reads; deeper text is left to
// encoding/json.
const maxSkipDepth = 1000

// skipValue returns the end of the well-formed JSON value that starts at
// b[i], and whether it holds white space outside its strings; ok is false
// when no well-formed value starts there.
func skipValue(b []byte, i, depth int) (end int, spaced, ok bool) {
	if i == len(b) || depth > maxSkipDepth {
		return 0, false, false
	}
	switch c := b[i]; {
	case c == '"':
		for i++; i < len(b); i++ {
			switch c := b[i]; {
			case c == '"':
				return i + 1, false, true
			case c < 0x20:
				return 0, false, false
			case c == '\\':
				if i++; i == len(b) {
					return 0, false, false
				}
				switch b[i] {
				case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				case 'u':
					if i+4 >= len(b) || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
						return 0, false, false
					}
					i += 4
				default:
					return 0, false, false
				}
			}
		}
		return 0, false, false
	case c == '{' || c == '[':
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		j := skipSpace(b, i+1)
		spaced = j > i+1
		if j < len(b) && b[j] == closing {
			return j + 1, spaced, true
		}
		for {
			if c == '{' {
				if j == len(b) || b[j] != '"' {
					return 0, false, false
				}
				nameEnd, _, good := skipValue(b, j, depth+1)
				if !good {
					return 0, false, false
				}
				k := skipSpace(b, nameEnd)
				if k == len(b) || b[k] != ':' {
					return 0, false, false
				}
				j = skipSpace(b, k+1)
				spaced = spaced || k > nameEnd || j > k+1
			}
			end, sp, good := skipValue(b, j, depth+1)
			if !good {
				return 0, false, false
			}
			k := skipSpace(b, end)
			spaced = spaced || sp || k > end
			if k == len(b) {
				return 0, false, false
			}
			switch b[k] {
			case ',':
				j = skipSpace(b, k+1)
				spaced = spaced || j > k+1
			case closing:
				return k + 1, spaced, true
			default:
				return 0, false, false
			}
		}
	case c == '-' || '0' <= c && c <= '9':
		if c == '-' {
			i++
		}
		switch {
		case i < len(b) && b[i] == '0':
			i++
		case !isDigit(b, i):
			return 0, false, false
		default:
			i = skipDigits(b, i)
		}
		if i < len(b) && b[i] == '.' {
			if !isDigit(b, i+1) {
				return 0, false, false
			}
			i = skipDigits(b, i+1)
		}
		if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
			i++
			if i < len(b) && (b[i] == '+' || b[i] == '-') {
				i++
			}
			if !isDigit(b, i) {
				return 0, false, false
			}
			i = skipDigits(b, i)
		}
		return i, false, true
	}
	for _, word := range [...]string{"true", "false", "null"} {
		if bytes.HasPrefix(b[i:], []byte(word)) {
			return i + len(word), false, true
		}
	}
	return 0, false, false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(b []byte, i int) bool { return i < len(b) && '0' <= b[i] && b[i] <= '9' }

func skipDigits(b []byte, i int) int {
	for isDigit(b, i) {
		i++
	}
	return i
}
