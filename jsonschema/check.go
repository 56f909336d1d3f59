package jsonschema

import (
	"encoding/json"
	"fmt"
	"net/mail"
	"net/netip"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// Problem codes of a value checked against a schema.
const (
	CodeRequired     = "schema_required"
	CodeType         = "schema_type"
	CodeEnum         = "schema_enum"
	CodeRange        = "schema_range"
	CodeFormat       = "schema_format"
	CodeUnknownField = "schema_unknown_field"
)

// Checker checks values against schemas.
type Checker struct {
	// What names the schema in messages: "the output_schema of notes.summary".
	What string
	// Report receives each problem.
	Report ReportFunc
	// Quiet skips building pointers and messages: the caller wants to know only
	// whether there is a problem.
	Quiet bool
	// Visit, when set, sees every value before it is checked, with the schema
	// it is checked against (nil when none applies); when it returns true the
	// value is taken as checked. Values under a nil schema are visited too.
	Visit func(path string, v any, s *Schema) bool
}

func (c *Checker) errorf(path, code, format string, args ...any) {
	if c.Quiet {
		c.Report("", code, "")
		return
	}
	c.Report(path, code, fmt.Sprintf(format, args...))
}

func (c *Checker) key(base, k string) string {
	if c.Quiet {
		return ""
	}
	return Key(base, k)
}

func (c *Checker) index(base string, i int) string {
	if c.Quiet {
		return ""
	}
	return Index(base, i)
}

// Check checks the decoded value v found at path against s. A nil s accepts
// every value.
func (c *Checker) Check(path string, v any, s *Schema) {
	if c.Visit != nil && c.Visit(path, v, s) {
		return
	}
	if s == nil {
		if c.Visit == nil {
			return
		}
		if m, ok := membersOf(v); ok {
			for k, e := range m.All() {
				c.Check(c.key(path, k), e, nil)
			}
		} else if a, ok := v.([]any); ok {
			for i, e := range a {
				c.Check(c.index(path, i), e, nil)
			}
		}
		return
	}
	what := c.What
	vt := TypeOf(v)
	if !s.Types.Accepts(vt) {
		c.errorf(path, CodeType, "%s must be %s by %s, not %s", Subject(path), s.Types, what, vt)
		return
	}
	if s.Enum != nil && !anyEqual(s.Enum, v) {
		c.errorf(path, CodeEnum, "%s is %s; %s allows only %s", Subject(path), Text(v), what, enumText(s.Enum))
	}
	if s.HasConst && !Equal(s.Const, v) {
		c.errorf(path, CodeEnum, "%s is %s; %s allows only %s", Subject(path), Text(v), what, Text(s.Const))
	}
	switch x := v.(type) {
	case json.Number:
		f, _ := x.Float64() // out of range is ±Inf, beyond every bound
		c.numberBounds(path, f, s)
	case float64:
		c.numberBounds(path, x, s)
	case string:
		n := int64(utf8.RuneCountInString(x))
		if s.MinLength != nil && n < *s.MinLength || s.MaxLength != nil && n > *s.MaxLength {
			c.errorf(path, CodeRange, "%s has %d characters; %s allows %s", Subject(path), n, what, boundsText(s.MinLength, s.MaxLength, "characters"))
		}
		if s.Format != "" && !FormatOK(s.Format, x) {
			c.errorf(path, CodeFormat, "%s is not a valid %s, as %s requires", Text(x), s.Format, what)
		}
	case []any:
		n := int64(len(x))
		if s.MinItems != nil && n < *s.MinItems || s.MaxItems != nil && n > *s.MaxItems {
			c.errorf(path, CodeRange, "%s has %d entries; %s allows %s", Subject(path), n, what, boundsText(s.MinItems, s.MaxItems, "entries"))
		}
		if s.Unique {
			for i := range x {
				for j := 0; j < i; j++ {
					if Equal(x[i], x[j]) {
						c.errorf(c.index(path, i), CodeEnum, "repeats entry %d; %s requires unique entries", j, what)
						break
					}
				}
			}
		}
		for i, e := range x {
			c.Check(c.index(path, i), e, s.Items)
		}
	default:
		m, ok := membersOf(v)
		if !ok {
			return
		}
		for _, r := range s.Required {
			if _, has := m.Get(r); !has {
				c.errorf(c.key(path, r), CodeRequired, "%q is required by %s", r, what)
			}
		}
		n := int64(m.Len())
		if s.MinProps != nil && n < *s.MinProps || s.MaxProps != nil && n > *s.MaxProps {
			c.errorf(path, CodeRange, "%s has %d members; %s allows %s", Subject(path), n, what, boundsText(s.MinProps, s.MaxProps, "members"))
		}
		if o, ok := m.(*ordered); ok { // what Decode gives, read without an iterator
			for i, k := range o.keys {
				c.member(path, k, o.vals[i], s)
			}
			return
		}
		for k, e := range m.All() {
			c.member(path, k, e, s)
		}
	}
}

// member checks the member k, of value e, of the object at path against the
// object's schema s.
func (c *Checker) member(path, k string, e any, s *Schema) {
	sub, ok := s.Props[k]
	if !ok && s.Additional != nil && !*s.Additional {
		members := "none"
		if len(s.Props) > 0 {
			members = strings.Join(s.PropNames(), ", ")
		}
		c.errorf(c.key(path, k), CodeUnknownField, "%q is not a member %s allows (members: %s)", k, c.What, members)
		c.Check(c.key(path, k), e, nil)
		return
	}
	c.Check(c.key(path, k), e, sub)
}

func (c *Checker) numberBounds(path string, f float64, s *Schema) {
	what := c.What
	switch {
	case s.Minimum != nil && f < *s.Minimum:
		c.errorf(path, CodeRange, "%s is %s; %s requires at least %s", Subject(path), FormatNumber(f), what, FormatNumber(*s.Minimum))
	case s.Maximum != nil && f > *s.Maximum:
		c.errorf(path, CodeRange, "%s is %s; %s requires at most %s", Subject(path), FormatNumber(f), what, FormatNumber(*s.Maximum))
	case s.ExclMin != nil && f <= *s.ExclMin:
		c.errorf(path, CodeRange, "%s is %s; %s requires more than %s", Subject(path), FormatNumber(f), what, FormatNumber(*s.ExclMin))
	case s.ExclMax != nil && f >= *s.ExclMax:
		c.errorf(path, CodeRange, "%s is %s; %s requires less than %s", Subject(path), FormatNumber(f), what, FormatNumber(*s.ExclMax))
	}
}

func boundsText(lo, hi *int64, unit string) string {
	switch {
	case lo != nil && hi != nil:
		return fmt.Sprintf("%d to %d %s", *lo, *hi, unit)
	case lo != nil:
		return fmt.Sprintf("at least %d %s", *lo, unit)
	case hi != nil:
		return fmt.Sprintf("at most %d %s", *hi, unit)
	}
	return "any number of " + unit
}

func anyEqual(list []any, v any) bool {
	for _, e := range list {
		if Equal(e, v) {
			return true
		}
	}
	return false
}

func enumText(list []any) string {
	parts := make([]string, len(list))
	for i, e := range list {
		parts[i] = Text(e)
	}
	return strings.Join(parts, ", ")
}

// FormatOK checks a string against a format of the subset.
func FormatOK(format, s string) bool {
	switch format {
	case "date-time":
		_, err := time.Parse(time.RFC3339Nano, s)
		return err == nil
	case "date":
		_, err := time.Parse("2006-01-02", s)
		return err == nil
	case "time":
		_, err := time.Parse("15:04:05.999999999Z07:00", s)
		return err == nil
	case "email":
		a, err := mail.ParseAddress(s)
		return err == nil && a.Address == s && a.Name == ""
	case "uri":
		p, err := url.Parse(s)
		return err == nil && p.Scheme != "" && (p.Host != "" || p.Opaque != "" || p.Path != "")
	case "hostname":
		return isHostname(s)
	case "ipv4":
		a, err := netip.ParseAddr(s)
		return err == nil && a.Is4()
	case "ipv6":
		a, err := netip.ParseAddr(s)
		return err == nil && a.Is6() && a.Zone() == ""
	case "uuid":
		if len(s) != 36 {
			return false
		}
		for i := 0; i < len(s); i++ {
			c := s[i]
			if i == 8 || i == 13 || i == 18 || i == 23 {
				if c != '-' {
					return false
				}
			} else if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
		return true
	}
	return true
}

// isHostname checks a host name of RFC 1123: dot-separated labels of 1 to 63
// letters, digits and hyphens, not starting or ending with a hyphen, 253
// characters in all.
func isHostname(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}
