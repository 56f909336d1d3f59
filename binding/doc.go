// Package binding implements the binding language of UI Runtime v2: the
// `{{path}}` templates that read host state into props, arguments and
// conditions, and the conditions built on them.
//
// A template is literal text with bindings in it. A binding is a path between
// `{{` and `}}`, optionally surrounded by spaces or tabs:
//
//	template = { text | "{{" ws path ws "}}" }
//	path     = name { "." name | "[" index "]" }
//	name     = letter-or-underscore { letter | digit | "_" | "-" }   (ASCII)
//	index    = digit { digit }                                        (at most 9 digits)
//
// The two characters `\{{` are an escape: they stand for a literal `{{` and
// start no binding. Every other backslash is literal text.
//
// A path starts at one of the readable roots of the specification (see Roots),
// and has at most MaxDepth segments, an index counting as a segment.
//
// Typing: a template that is exactly one binding and nothing else keeps the JSON
// type of the value it reads (a missing value is null). Any other template is
// text: each binding is replaced by Text of its value.
//
// Conditions are {path, equals|not_equals|exists} or the combinators all, any
// and not. The evaluator here is the reference for the preview's JavaScript
// runtime; testdata/conformance.json holds the cases both must pass.
package binding
