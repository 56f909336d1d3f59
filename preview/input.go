package preview

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Input rules, in the order CheckInput reports them. Spec, Inputs and
// validation: "required, min_length, max_length, minimum, maximum, error_text
// apply to field, select and switch." RuleNumber is a field whose keyboard is
// number, or that has minimum or maximum, holding text that is not a number.
const (
	RuleRequired  = "required"
	RuleNumber    = "number"
	RuleMinLength = "min_length"
	RuleMaxLength = "max_length"
	RuleMinimum   = "minimum"
	RuleMaximum   = "maximum"
)

// numberText is the form of a number a field accepts: decimal digits with an
// optional sign, point and exponent (no hexadecimal, no Infinity or NaN).
var numberText = regexp.MustCompile(`^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$`)

// InputValue is the value a field commits for the text typed into it: the
// text itself, or for keyboard number a number when the text is one, null
// (nil) when it is empty, and the text otherwise (which CheckInput then
// refuses). The preview's runtime (inputValue in assets/core.js) follows the
// same rule; testdata/input-conformance.json holds the cases both pass.
func InputValue(props map[string]any, text string) any {
	if props["keyboard"] != "number" {
		return text
	}
	t := strings.TrimSpace(text)
	if t == "" {
		return nil
	}
	if numberText.MatchString(t) {
		if f, err := strconv.ParseFloat(t, 64); err == nil {
			return f
		}
	}
	return text
}

// CheckInput returns the rules a committed value breaks for an input node of
// type field, select or switch with props. A missing value (null, "", a
// switch that is not on) breaks only required. Lengths count characters
// (code points); minimum and maximum apply to a number, or to text that reads
// as one.
func CheckInput(nodeType string, props map[string]any, value any) []string {
	var out []string
	missing := value == nil || value == ""
	if nodeType == "switch" && value != true {
		missing = true
	}
	if props["required"] == true && missing {
		return []string{RuleRequired}
	}
	if missing {
		return nil
	}
	_, isNumber := value.(float64)
	if nodeType == "field" && props["keyboard"] == "number" && !isNumber {
		return []string{RuleNumber}
	}
	minimum, hasMin := props["minimum"].(float64)
	maximum, hasMax := props["maximum"].(float64)
	var num *float64
	if f, ok := value.(float64); ok {
		num = &f
	}
	if s, ok := value.(string); ok {
		n := float64(utf8.RuneCountInString(s))
		if l, ok := props["min_length"].(float64); ok && n < l {
			out = append(out, RuleMinLength)
		}
		if l, ok := props["max_length"].(float64); ok && n > l {
			out = append(out, RuleMaxLength)
		}
		if hasMin || hasMax {
			if f, ok := InputValue(map[string]any{"keyboard": "number"}, s).(float64); ok {
				num = &f
			} else {
				out = append(out, RuleNumber)
			}
		}
	}
	if num != nil {
		if hasMin && *num < minimum {
			out = append(out, RuleMinimum)
		}
		if hasMax && *num > maximum {
			out = append(out, RuleMaximum)
		}
	}
	return out
}
