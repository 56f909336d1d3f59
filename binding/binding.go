package binding

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxDepth bounds a path. Spec, Limits/UI config: "Binding depth: 12 segments".
// The root and every name or index after it count as one segment each.
const MaxDepth = 12

// maxIndexDigits bounds an index so that it always fits an int.
const maxIndexDigits = 9

// Error codes of templates and paths.
const (
	// CodeSyntax: a template or path that does not follow the grammar.
	CodeSyntax = "binding_syntax"
	// CodeDepth: a path with more than MaxDepth segments.
	CodeDepth = "binding_depth"
	// CodeRoot: a path that starts at no readable root.
	CodeRoot = "binding_root"
	// CodePath: a path that leaves the shape of its root (data.<source> without
	// completed, summary or data; context.screen.depth; ...).
	CodePath = "binding_path"
)

// Error is a template or path that breaks a rule; Offset is the byte offset in
// the string where the problem is.
type Error struct {
	Code    string
	Offset  int
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("%s at byte %d: %s", e.Code, e.Offset, e.Message) }

// Segment is one step of a path: a member name, or an array index.
type Segment struct {
	Name    string
	Index   int
	IsIndex bool
}

// Path is a parsed binding path; its first segment is the root.
type Path []Segment

// String returns the path in its canonical written form.
func (p Path) String() string {
	var b strings.Builder
	for i, s := range p {
		switch {
		case s.IsIndex:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.Index))
			b.WriteByte(']')
		case i == 0:
			b.WriteString(s.Name)
		default:
			b.WriteByte('.')
			b.WriteString(s.Name)
		}
	}
	return b.String()
}

// Root returns the name of the root segment.
func (p Path) Root() string {
	if len(p) == 0 {
		return ""
	}
	return p[0].Name
}

// Part is a piece of a template: literal text when Path is nil, else a binding.
// Offset is the byte offset of the part in the template (for a binding, of its
// `{{`).
type Part struct {
	Text   string
	Path   Path
	Offset int
}

// Template is a parsed template.
type Template struct {
	Parts []Part
}

// Whole reports whether the template is exactly one binding and nothing else,
// so that its value keeps its JSON type.
func (t *Template) Whole() bool { return len(t.Parts) == 1 && t.Parts[0].Path != nil }

// HasBindings reports whether the template contains at least one binding.
func (t *Template) HasBindings() bool {
	for _, p := range t.Parts {
		if p.Path != nil {
			return true
		}
	}
	return false
}

// MayBind reports whether s could contain a binding or an escape, that is
// whether Parse can give anything but s itself as text. It lets callers skip
// parsing the common plain strings.
func MayBind(s string) bool { return strings.Contains(s, "{{") }

// Parse parses a template and checks each binding's path against the grammar,
// MaxDepth and the readable roots (CheckPath).
func Parse(s string) (*Template, error) {
	t := &Template{Parts: make([]Part, 0, 2*strings.Count(s, "{{")+1)}
	// text collects literal text; it stays a substring of s until an escape
	// forces a copy.
	var text []byte
	textStart, textEnd := -1, -1
	addText := func(from, to int) {
		if from == to {
			return
		}
		switch {
		case textStart < 0:
			textStart, textEnd = from, to
		case text == nil && textEnd == from:
			textEnd = to
		default:
			if text == nil {
				text = append(text, s[textStart:textEnd]...)
			}
			text = append(text, s[from:to]...)
		}
	}
	flush := func() {
		if textStart < 0 {
			return
		}
		str := s[textStart:textEnd]
		if text != nil {
			str = string(text)
		}
		t.Parts = append(t.Parts, Part{Text: str, Offset: textStart})
		text, textStart, textEnd = nil, -1, -1
	}
	i := 0
	for i < len(s) {
		j := strings.Index(s[i:], "{{")
		if j < 0 {
			addText(i, len(s))
			break
		}
		j += i
		if j > i && s[j-1] == '\\' {
			// `\{{` is a literal `{{`: the text up to the backslash, then the braces.
			addText(i, j-1)
			addText(j, j+2)
			i = j + 2
			continue
		}
		addText(i, j)
		end := strings.Index(s[j+2:], "}}")
		if end < 0 {
			return nil, &Error{CodeSyntax, j, "`{{` is not closed by `}}`; write `\\{{` for a literal `{{`"}
		}
		inner := s[j+2 : j+2+end]
		lead := len(inner) - len(strings.TrimLeft(inner, " \t"))
		body := strings.Trim(inner, " \t")
		if body == "" {
			return nil, &Error{CodeSyntax, j, "empty binding `{{}}`; a binding holds a path such as state.query"}
		}
		p, err := ParsePath(body)
		if err != nil {
			e := err.(*Error)
			e.Offset += j + 2 + lead
			return nil, e
		}
		flush()
		t.Parts = append(t.Parts, Part{Path: p, Offset: j})
		i = j + 2 + end + 2
	}
	flush()
	return t, nil
}

// ParsePath parses a bare path (no braces), as used by a condition's `path`,
// and checks it like a binding in Parse.
func ParsePath(s string) (Path, error) {
	p, err := parsePath(s)
	if err != nil {
		return nil, err
	}
	if err := CheckPath(p); err != nil {
		return nil, err
	}
	return p, nil
}

func parsePath(s string) (Path, error) {
	if s == "" {
		return nil, &Error{CodeSyntax, 0, "empty path; a path is written like data.weather.data.city or state.tab"}
	}
	p := make(Path, 0, 1+strings.Count(s, ".")+strings.Count(s, "["))
	i := 0
	for {
		// A name.
		start := i
		if i >= len(s) || !nameStart(s[i]) {
			return nil, &Error{CodeSyntax, i, syntaxHint(s, i, "a name (a letter or _, then letters, digits, _ or -)")}
		}
		for i < len(s) && nameChar(s[i]) {
			i++
		}
		p = append(p, Segment{Name: s[start:i]})
		// Indexes after it.
		for i < len(s) && s[i] == '[' {
			k := i + 1
			for k < len(s) && s[k] >= '0' && s[k] <= '9' {
				k++
			}
			if k == i+1 || k >= len(s) || s[k] != ']' {
				return nil, &Error{CodeSyntax, i, syntaxHint(s, i, "an index: `[` digits `]`, such as [0]")}
			}
			if k-(i+1) > maxIndexDigits {
				return nil, &Error{CodeSyntax, i, fmt.Sprintf("index %s has more than %d digits", s[i+1:k], maxIndexDigits)}
			}
			n, _ := strconv.Atoi(s[i+1 : k])
			p = append(p, Segment{Index: n, IsIndex: true})
			i = k + 1
		}
		if len(p) > MaxDepth {
			return nil, &Error{CodeDepth, 0, fmt.Sprintf("path %q has more than %d segments; a binding reads at most %d segments (the root, each name and each index count)", s, MaxDepth, MaxDepth)}
		}
		if i == len(s) {
			return p, nil
		}
		if s[i] != '.' {
			return nil, &Error{CodeSyntax, i, syntaxHint(s, i, "`.`, `[` or the end of the path")}
		}
		i++
	}
}

func syntaxHint(s string, i int, want string) string {
	if i >= len(s) {
		return fmt.Sprintf("path %q ends early; expected %s", s, want)
	}
	return fmt.Sprintf("unexpected %q in path %q; expected %s (no expressions, operators or spaces inside a path)", s[i:i+1], s, want)
}

func nameStart(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' }

func nameChar(c byte) bool { return nameStart(c) || c >= '0' && c <= '9' || c == '-' }
