package binding

import (
	"fmt"
	"sort"
	"strconv"
)

// MaxConditionDepth bounds nesting. Spec, Limits/UI config: "Condition depth /
// count: 4 / 32". A condition's depth counts every condition object on the way
// from the outermost (depth 1) to the innermost: {"not": {"path": ...}} has
// depth 2, and all → any → not → single has depth 4.
const MaxConditionDepth = 4

// MaxConditions bounds the conditions of one UI config, counted as single
// conditions ({path, operator}) in every condition place together. Spec,
// Limits/UI config: "Condition depth / count: 4 / 32".
const MaxConditions = 32

// Condition operators and combinators.
const (
	OpEquals    = "equals"
	OpNotEquals = "not_equals"
	OpExists    = "exists"
	OpAll       = "all"
	OpAny       = "any"
	OpNot       = "not"
)

// Problem codes of conditions (paths give the binding codes).
const (
	// CodeConditionDepth: a condition nested deeper than MaxConditionDepth.
	CodeConditionDepth = "condition_depth"
	// CodeConditionOperator: a single condition without exactly one of equals,
	// not_equals and exists.
	CodeConditionOperator = "condition_operator"
	// CodeConditionForm: members of a single condition mixed with a combinator,
	// or more than one combinator in one object.
	CodeConditionForm = "condition_form"
	// The shape codes shared with the validator.
	CodeType         = "type"
	CodeRequired     = "required"
	CodeCount        = "count"
	CodeUnknownField = "unknown_field"
)

// Condition is a parsed condition. A single condition has Op equals,
// not_equals or exists, a Path and a Value (the operand, or for exists the
// wanted boolean). all and any have Items; not has one Item.
type Condition struct {
	Op    string
	Path  Path
	Value any
	Items []*Condition
	// Pointer is the JSON Pointer of this condition object relative to the
	// outermost one ("" for the outermost, "/all/0/not" deeper).
	Pointer string
}

// Problem is a rule a condition breaks, at a JSON Pointer relative to the
// outermost condition object.
type Problem struct {
	Pointer string
	Code    string
	Message string
}

var (
	singleMembers     = []string{"path", OpEquals, OpNotEquals, OpExists}
	combinatorMembers = []string{OpAll, OpAny, OpNot}
)

// ParseCondition parses a decoded JSON condition (objects as map[string]any,
// arrays as []any) and reports every rule it breaks. It returns the parts that
// could be parsed even when there are problems; a nil Condition means v is not
// a condition at all.
func ParseCondition(v any) (*Condition, []Problem) {
	var ps []Problem
	c := parseCondition(v, "", 1, &ps)
	return c, ps
}

func parseCondition(v any, ptr string, depth int, ps *[]Problem) *Condition {
	add := func(p, code, format string, args ...any) {
		*ps = append(*ps, Problem{p, code, fmt.Sprintf(format, args...)})
	}
	m, ok := v.(map[string]any)
	if !ok {
		add(ptr, CodeType, "a condition is an object: {path, equals|not_equals|exists} or {all: [...]}, {any: [...]}, {not: {...}}, not %s", jsonType(v))
		return nil
	}
	if depth > MaxConditionDepth {
		add(ptr, CodeConditionDepth, "this condition is at depth %d; conditions nest at most %d deep (the outermost counts as 1)", depth, MaxConditionDepth)
		return nil
	}
	// Look the known members up; only an object with other members is walked.
	var combinators, singles []string
	known := 0
	for _, k := range combinatorMembers {
		if _, ok := m[k]; ok {
			combinators = append(combinators, k)
			known++
		}
	}
	for _, k := range singleMembers {
		if _, ok := m[k]; ok {
			known++
			if len(combinators) > 0 {
				singles = append(singles, k)
			}
		}
	}
	if known < len(m) {
		var unknown []string
		for k := range m {
			if !contains(singleMembers, k) && !contains(combinatorMembers, k) {
				unknown = append(unknown, k)
			}
		}
		sort.Strings(unknown)
		for _, k := range unknown {
			add(ptr+"/"+escape(k), CodeUnknownField, "unknown member %q; a condition has path with one of equals, not_equals, exists, or one of all, any, not", k)
		}
	}
	if len(combinators) > 0 {
		if len(combinators) > 1 || len(singles) > 0 {
			add(ptr, CodeConditionForm, "this object mixes %v; a condition object is either {path, operator} or holds exactly one of all, any, not", append(combinators, singles...))
			return nil
		}
		op := combinators[0]
		c := &Condition{Op: op, Pointer: ptr}
		p := ptr + "/" + op
		if op == OpNot {
			if _, ok := m[op].(map[string]any); !ok {
				add(p, CodeType, "not holds one condition object, not %s", jsonType(m[op]))
				return c
			}
			if sub := parseCondition(m[op], p, depth+1, ps); sub != nil {
				c.Items = []*Condition{sub}
			}
			return c
		}
		a, ok := m[op].([]any)
		if !ok {
			add(p, CodeType, "%s holds an array of conditions, not %s", op, jsonType(m[op]))
			return c
		}
		if len(a) == 0 {
			add(p, CodeCount, "%s is empty; it holds at least one condition", op)
		}
		for i, e := range a {
			if sub := parseCondition(e, p+"/"+strconv.Itoa(i), depth+1, ps); sub != nil {
				c.Items = append(c.Items, sub)
			}
		}
		return c
	}
	c := &Condition{Pointer: ptr}
	if pv, ok := m["path"]; !ok {
		add(ptr+"/path", CodeRequired, "path is required: the value to test, such as state.tab or data.weather.completed")
	} else if s, ok := pv.(string); !ok {
		add(ptr+"/path", CodeType, "path is a string such as state.tab, not %s", jsonType(pv))
	} else if p, err := ParsePath(s); err != nil {
		e := err.(*Error)
		msg := e.Message
		if MayBind(s) {
			msg += "; a condition path is written without {{ }}"
		}
		add(ptr+"/path", e.Code, "%s", msg)
	} else {
		c.Path = p
	}
	var opsBuf [3]string
	ops := opsBuf[:0]
	for _, k := range singleMembers[1:] {
		if _, ok := m[k]; ok {
			ops = append(ops, k)
		}
	}
	switch len(ops) {
	case 0:
		add(ptr, CodeConditionOperator, "a single condition needs exactly one of equals, not_equals, exists; it has none")
	case 1:
		c.Op = ops[0]
		c.Value = m[ops[0]]
		if c.Op == OpExists {
			if _, ok := c.Value.(bool); !ok {
				add(ptr+"/exists", CodeType, "exists is true or false, not %s", jsonType(c.Value))
				c.Op = ""
			}
		}
	default:
		add(ptr, CodeConditionOperator, "a single condition needs exactly one of equals, not_equals, exists; it has %v", ops)
	}
	return c
}

// Eval evaluates the condition against ctx:
//   - equals: the value read (null when missing) equals the operand (Equal);
//   - not_equals: the opposite of equals;
//   - exists: true when the value is present and not null; exists:false is
//     the opposite;
//   - all: every item holds; any: at least one holds; not: the item does not.
//
// Eval is meant for conditions that ParseCondition accepted without problems.
func (c *Condition) Eval(ctx any) bool {
	if c == nil {
		return false
	}
	switch c.Op {
	case OpAll:
		if len(c.Items) == 0 {
			return false
		}
		for _, s := range c.Items {
			if !s.Eval(ctx) {
				return false
			}
		}
		return true
	case OpAny:
		for _, s := range c.Items {
			if s.Eval(ctx) {
				return true
			}
		}
		return false
	case OpNot:
		return len(c.Items) == 1 && !c.Items[0].Eval(ctx)
	}
	if c.Path == nil {
		return false
	}
	v, ok := Resolve(ctx, c.Path)
	switch c.Op {
	case OpEquals:
		return Equal(v, c.Value)
	case OpNotEquals:
		return !Equal(v, c.Value)
	case OpExists:
		want, _ := c.Value.(bool)
		return (ok && v != nil) == want
	}
	return false
}

// Leaves returns the number of single conditions in c.
func (c *Condition) Leaves() int {
	if c == nil {
		return 0
	}
	if len(c.Items) == 0 && c.Op != OpAll && c.Op != OpAny && c.Op != OpNot {
		return 1
	}
	n := 0
	for _, s := range c.Items {
		n += s.Leaves()
	}
	return n
}

// Walk calls f for c and every condition inside it, outermost first.
func (c *Condition) Walk(f func(*Condition)) {
	if c == nil {
		return
	}
	f(c)
	for _, s := range c.Items {
		s.Walk(f)
	}
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	if _, ok := number(v); ok {
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// escape escapes a JSON Pointer reference token.
func escape(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '~':
			out = append(out, '~', '0')
		case '/':
			out = append(out, '~', '1')
		default:
			out = append(out, s[i])
		}
	}
	return string(out)
}
