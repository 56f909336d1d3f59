package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// FlagSet is the flags of one command. Every flag has an environment twin,
// which applies when the flag is not given on the command line; a value that
// does not parse or is out of range, from either, stops the command with an
// error naming the flag or the variable.
type FlagSet struct {
	fs    *flag.FlagSet
	flags []*Flag
}

// Flag describes one flag for the usage text.
type Flag struct {
	Name    string // without dashes
	Env     string // the environment twin
	Default string // as printed; "" prints nothing
	Usage   string
	value   flag.Value
	isBool  bool
}

// NewFlagSet returns the flag set of the command name.
func NewFlagSet(name string) *FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &FlagSet{fs: fs}
}

// Flags lists the flags in the order they were defined.
func (f *FlagSet) Flags() []*Flag { return f.flags }

func (f *FlagSet) define(name, env, def, usage string, v flag.Value) *Flag {
	fl := &Flag{Name: name, Env: env, Default: def, Usage: usage, value: v}
	if b, ok := v.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		fl.isBool = true
	}
	f.fs.Var(v, name, usage)
	f.flags = append(f.flags, fl)
	return fl
}

// String defines a string flag.
func (f *FlagSet) String(name, env, def, usage string) *string {
	p := new(string)
	*p = def
	f.define(name, env, def, usage, (*stringValue)(p))
	return p
}

// Enum defines a string flag that takes one of the allowed values.
func (f *FlagSet) Enum(name, env, def, usage string, allowed ...string) *string {
	p := new(string)
	*p = def
	f.define(name, env, def, usage+" ("+strings.Join(allowed, ", ")+")", &enumValue{p: p, allowed: allowed})
	return p
}

// Bool defines a boolean flag: true, false, 1, 0, t, f (any case).
func (f *FlagSet) Bool(name, env string, def bool, usage string) *bool {
	p := new(bool)
	*p = def
	shown := ""
	if def {
		shown = "true"
	}
	f.define(name, env, shown, usage, (*boolValue)(p))
	return p
}

// Int defines an integer flag in [lo, hi].
func (f *FlagSet) Int(name, env string, def, lo, hi int, usage string) *int {
	p := new(int)
	*p = def
	f.define(name, env, strconv.Itoa(def), usage, &intValue{p: p, lo: lo, hi: hi})
	return p
}

// Duration defines a duration flag (such as 10s or 2m) in [lo, hi].
func (f *FlagSet) Duration(name, env string, def, lo, hi time.Duration, usage string) *time.Duration {
	p := new(time.Duration)
	*p = def
	f.define(name, env, def.String(), usage, &durationValue{p: p, lo: lo, hi: hi})
	return p
}

// Parse parses the command line, whose flags may come before or after the
// positional arguments, then applies the environment twin of every flag the
// command line did not give. It returns the positional arguments.
func (f *FlagSet) Parse(args []string) ([]string, error) {
	var positional []string
	for {
		if err := f.fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, ErrHelp
			}
			return nil, Usagef("%v", err)
		}
		if f.fs.NArg() == 0 {
			break
		}
		positional = append(positional, f.fs.Arg(0))
		args = f.fs.Args()[1:]
	}
	given := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	for _, fl := range f.flags {
		if given[fl.Name] || fl.Env == "" {
			continue
		}
		v, ok := os.LookupEnv(fl.Env)
		if !ok {
			continue
		}
		if err := fl.value.Set(v); err != nil {
			return nil, Usagef("environment %s=%q (the twin of --%s): %v", fl.Env, v, fl.Name, err)
		}
	}
	return positional, nil
}

type stringValue string

func (s *stringValue) Set(v string) error { *s = stringValue(v); return nil }
func (s *stringValue) String() string     { return string(*s) }

type enumValue struct {
	p       *string
	allowed []string
}

func (e *enumValue) Set(v string) error {
	if !slices.Contains(e.allowed, v) {
		return fmt.Errorf("%q is not one of %s", v, strings.Join(e.allowed, ", "))
	}
	*e.p = v
	return nil
}

func (e *enumValue) String() string {
	if e.p == nil {
		return ""
	}
	return *e.p
}

type boolValue bool

func (b *boolValue) Set(v string) error {
	x, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("%q is not a boolean (true, false, 1 or 0)", v)
	}
	*b = boolValue(x)
	return nil
}
func (b *boolValue) String() string   { return strconv.FormatBool(bool(*b)) }
func (b *boolValue) IsBoolFlag() bool { return true }

type intValue struct {
	p      *int
	lo, hi int
}

func (n *intValue) Set(v string) error {
	x, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return fmt.Errorf("%q is not an integer", v)
	}
	if x < n.lo || x > n.hi {
		return fmt.Errorf("%d is out of range: %d to %d", x, n.lo, n.hi)
	}
	*n.p = x
	return nil
}

func (n *intValue) String() string {
	if n.p == nil {
		return ""
	}
	return strconv.Itoa(*n.p)
}

type durationValue struct {
	p      *time.Duration
	lo, hi time.Duration
}

func (d *durationValue) Set(v string) error {
	x, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil {
		return fmt.Errorf("%q is not a duration (such as 500ms, 10s or 2m)", v)
	}
	if x < d.lo || x > d.hi {
		return fmt.Errorf("%s is out of range: %s to %s", x, d.lo, d.hi)
	}
	*d.p = x
	return nil
}

func (d *durationValue) String() string {
	if d.p == nil {
		return ""
	}
	return d.p.String()
}
