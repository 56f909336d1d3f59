// Package validator checks plugin manifests and UI Runtime v2 configs against
// every rule of the specification, and reports each problem with a JSON Pointer,
// a stable code and a message that states the rule and the allowed values.
//
// All problems are reported at once, in document order, and the report is
// deterministic: the same input always gives the same report.
package validator

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"pluginhost/jsonschema"
	"pluginhost/models"
)

// Report is the outcome of a validation.
type Report struct {
	Valid    bool             `json:"valid"`
	Errors   []models.Problem `json:"errors"`
	Warnings []models.Problem `json:"warnings"`
	// LeftOut lists the files of a plugin folder that are not packaged
	// (sources, build leftovers, configs no extension uses).
	LeftOut []string `json:"left_out,omitempty"`
}

// Err returns a PACKAGE_REJECTED error that carries the report's errors, or nil
// when the report is valid.
func (r *Report) Err(what string) error {
	if r.Valid {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s is invalid: %d problem(s):", what, len(r.Errors))
	for _, p := range r.Errors {
		b.WriteString(" ")
		if p.File != "" {
			b.WriteString(p.File + " ")
		}
		fmt.Fprintf(&b, "%s [%s] %s;", pathOrRoot(p.Path), p.Code, p.Message)
	}
	return &models.Error{Code: models.ErrPackageRejected, Message: strings.TrimSuffix(b.String(), ";"), Problems: r.Errors}
}

func pathOrRoot(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

// Merge appends another report's problems, marking them with file.
func (r *Report) Merge(file string, o *Report) {
	for _, p := range o.Errors {
		if p.File == "" {
			p.File = file
		}
		r.Errors = append(r.Errors, p)
	}
	for _, p := range o.Warnings {
		if p.File == "" {
			p.File = file
		}
		r.Warnings = append(r.Warnings, p)
	}
	r.Valid = len(r.Errors) == 0
}

// checker collects problems while walking a document.
//
// A quiet checker only notes whether there is any problem: it builds no JSON
// Pointer and no message. Most configs are valid, so a check first runs
// quietly and is repeated in full only when it found something.
type checker struct {
	errs  []models.Problem
	warns []models.Problem
	quiet bool
	found bool
}

func (c *checker) errorf(path, code, format string, args ...any) {
	if c.quiet {
		c.found = true
		return
	}
	c.errs = append(c.errs, models.Problem{Path: path, Code: code, Message: fmt.Sprintf(format, args...)})
}

// problem records an error found by package jsonschema.
func (c *checker) problem(path, code, msg string) {
	if c.quiet {
		c.found = true
		return
	}
	c.errs = append(c.errs, models.Problem{Path: path, Code: code, Message: msg})
}

func (c *checker) warnf(path, code, format string, args ...any) {
	if c.quiet {
		c.found = true
		return
	}
	c.warns = append(c.warns, models.Problem{Path: path, Code: code, Message: fmt.Sprintf(format, args...)})
}

// ptr, pkey and pidx build JSON Pointers, except in a quiet check.
func (c *checker) ptr(base string, tokens ...any) string {
	if c.quiet {
		return ""
	}
	return jsonschema.Pointer(base, tokens...)
}

func (c *checker) pkey(base, k string) string {
	if c.quiet {
		return ""
	}
	return jsonschema.Key(base, k)
}

func (c *checker) pidx(base string, i int) string {
	if c.quiet {
		return ""
	}
	return jsonschema.Index(base, i)
}

// finish returns the report of a checked document. The document's positions
// are computed only when there are problems to put in order.
func (c *checker) finish(doc *document) *Report {
	var order map[string]int
	if len(c.errs)+len(c.warns) > 0 {
		order = doc.order()
	}
	return c.report(order)
}

// report returns the problems sorted into document order by their position.
func (c *checker) report(order map[string]int) *Report {
	sortProblems(c.errs, order)
	sortProblems(c.warns, order)
	r := &Report{Valid: len(c.errs) == 0, Errors: c.errs, Warnings: c.warns}
	if r.Errors == nil {
		r.Errors = []models.Problem{}
	}
	if r.Warnings == nil {
		r.Warnings = []models.Problem{}
	}
	return r
}

// sortProblems orders problems by the document position of their path (the
// nearest ancestor that was seen while decoding), keeping the order of
// discovery among problems at the same place.
func sortProblems(ps []models.Problem, order map[string]int) {
	if len(ps) < 2 || order == nil {
		return
	}
	pos := make(map[string]int, len(ps))
	for _, p := range ps {
		if _, ok := pos[p.Path]; !ok {
			pos[p.Path] = position(p.Path, order)
		}
	}
	sort.SliceStable(ps, func(i, j int) bool { return pos[ps[i].Path] < pos[ps[j].Path] })
}

// position is the document position of the path, or of its nearest ancestor
// that exists in the document.
func position(p string, order map[string]int) int {
	for {
		if n, ok := order[p]; ok {
			return n
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			return -1
		}
		p = p[:i]
	}
}

// WriteText writes the report for a person: one line per problem, with its
// file and JSON Pointer, the files left out, and the verdict.
func (r *Report) WriteText(w io.Writer) {
	for _, p := range r.Errors {
		fmt.Fprintf(w, "error   %s%s [%s] %s\n", fileOf(p.File), pointer(p.Path), p.Code, p.Message)
	}
	for _, p := range r.Warnings {
		fmt.Fprintf(w, "warning %s%s [%s] %s\n", fileOf(p.File), pointer(p.Path), p.Code, p.Message)
	}
	if len(r.LeftOut) > 0 {
		fmt.Fprintf(w, "left out of the package (%d files the manifest does not name): %s\n", len(r.LeftOut), ListSome(r.LeftOut, 8))
	}
	if r.Valid {
		fmt.Fprintf(w, "valid (%d warnings)\n", len(r.Warnings))
	} else {
		fmt.Fprintf(w, "invalid: %d errors, %d warnings\n", len(r.Errors), len(r.Warnings))
	}
}

// ListSome lists at most n names, and how many more there are.
func ListSome(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

func fileOf(f string) string {
	if f == "" {
		return ""
	}
	return f + " "
}

func pointer(p string) string {
	if p == "" {
		return "/"
	}
	return p
}
