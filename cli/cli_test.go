package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// probe is a command with one flag of each kind, recording what it ran with.
type probe struct {
	name    string
	n       int
	d       time.Duration
	b       bool
	level   string
	dsn     string
	args    []string
	ran     bool
	failErr error
}

func (p *probe) command() Command {
	return Command{
		Name: "probe", Args: "[ARG...]", Summary: "a command for tests",
		Setup: func(fs *FlagSet) Runner {
			name := fs.String("name", "PROBE_NAME", "anon", "a name")
			n := fs.Int("n", "PROBE_N", 5, 1, 10, "a count")
			d := fs.Duration("wait", "PROBE_WAIT", time.Second, time.Millisecond, time.Minute, "a wait")
			b := fs.Bool("on", "PROBE_ON", true, "a switch")
			level := fs.Enum("level", "PROBE_LEVEL", "info", "a level", "debug", "info")
			dsn := fs.String("dsn", "PROBE_DSN", "", "a secret")
			return func(ctx context.Context, out IO, args []string) error {
				p.name, p.n, p.d, p.b, p.level, p.dsn, p.args, p.ran = *name, *n, *d, *b, *level, *dsn, args, true
				return p.failErr
			}
		},
	}
}

func runMain(t *testing.T, p *probe, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = Main(context.Background(), args, &o, &e, p.command())
	return code, o.String(), e.String()
}

func TestFlagsAndEnvironmentTwins(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		args     []string
		wantCode int
		wantErr  string // in stderr
		check    func(t *testing.T, p *probe)
	}{
		{name: "defaults", args: []string{"probe"}, check: func(t *testing.T, p *probe) {
			if p.name != "anon" || p.n != 5 || p.d != time.Second || !p.b || p.level != "info" {
				t.Errorf("defaults: %+v", p)
			}
		}},
		{name: "environment twin applies", env: map[string]string{"PROBE_NAME": "env", "PROBE_N": "7", "PROBE_WAIT": "2s", "PROBE_ON": "0", "PROBE_LEVEL": "debug"},
			args: []string{"probe"}, check: func(t *testing.T, p *probe) {
				if p.name != "env" || p.n != 7 || p.d != 2*time.Second || p.b || p.level != "debug" {
					t.Errorf("from the environment: %+v", p)
				}
			}},
		{name: "boolean twin accepts 1", env: map[string]string{"PROBE_ON": "1"}, args: []string{"probe", "--on=false"},
			check: func(t *testing.T, p *probe) {
				if p.b {
					t.Error("the flag must win over its twin")
				}
			}},
		{name: "flag wins over the environment", env: map[string]string{"PROBE_N": "7"}, args: []string{"probe", "--n", "3"},
			check: func(t *testing.T, p *probe) {
				if p.n != 3 {
					t.Errorf("n = %d, want 3", p.n)
				}
			}},
		{name: "flags after positional arguments", args: []string{"probe", "a", "--n", "2", "b"}, check: func(t *testing.T, p *probe) {
			if p.n != 2 || strings.Join(p.args, ",") != "a,b" {
				t.Errorf("n %d args %v", p.n, p.args)
			}
		}},
		{name: "integer at its limits", args: []string{"probe", "--n", "10"}, check: func(t *testing.T, p *probe) {
			if p.n != 10 {
				t.Errorf("n = %d", p.n)
			}
		}},
		{name: "integer one past the limit", args: []string{"probe", "--n", "11"}, wantCode: 2, wantErr: "11 is out of range: 1 to 10"},
		{name: "integer below the limit", args: []string{"probe", "--n", "0"}, wantCode: 2, wantErr: "out of range"},
		{name: "bad integer in the environment", env: map[string]string{"PROBE_N": "lots"}, args: []string{"probe"}, wantCode: 2,
			wantErr: `environment PROBE_N="lots" (the twin of --n): "lots" is not an integer`},
		{name: "bad boolean in the environment", env: map[string]string{"PROBE_ON": "yes"}, args: []string{"probe"}, wantCode: 2,
			wantErr: "PROBE_ON"},
		{name: "bad duration", args: []string{"probe", "--wait", "soon"}, wantCode: 2, wantErr: "not a duration"},
		{name: "duration out of range", env: map[string]string{"PROBE_WAIT": "1h"}, args: []string{"probe"}, wantCode: 2, wantErr: "PROBE_WAIT"},
		{name: "enum outside its values", args: []string{"probe", "--level", "loud"}, wantCode: 2, wantErr: `"loud" is not one of debug, info`},
		{name: "unknown flag", args: []string{"probe", "--nope"}, wantCode: 2, wantErr: "flag provided but not defined: -nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			p := &probe{}
			code, _, stderr := runMain(t, p, tt.args...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tt.wantCode, stderr)
			}
			if tt.wantErr != "" {
				if !strings.Contains(stderr, tt.wantErr) {
					t.Errorf("stderr %q does not say %q", stderr, tt.wantErr)
				}
				if p.ran {
					t.Error("the command ran despite a bad value")
				}
			}
			if tt.check != nil {
				tt.check(t, p)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"help", "probe"}, {"probe", "-h"}, {"probe", "--help"}} {
		p := &probe{}
		code, stdout, stderr := runMain(t, p, args...)
		if code != 0 || stderr != "" || p.ran {
			t.Fatalf("%v: exit %d, ran %t, stderr %q", args, code, p.ran, stderr)
		}
		for _, want := range []string{"Usage: pluginhost probe [flags] [ARG...]", "--name VALUE  [PROBE_NAME]", "(default anon)",
			"--n VALUE  [PROBE_N]", "--wait VALUE  [PROBE_WAIT]", "--on  [PROBE_ON]", "--level VALUE  [PROBE_LEVEL]", "--dsn VALUE  [PROBE_DSN]"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("%v: usage lacks %q:\n%s", args, want, stdout)
			}
		}
	}
	p := &probe{}
	if code, stdout, _ := runMain(t, p, "help"); code != 0 || !strings.Contains(stdout, "probe") || !strings.Contains(stdout, "token create") {
		t.Errorf("help: exit %d\n%s", code, stdout)
	}
	if code, _, stderr := runMain(t, p, "help", "nothing"); code != 2 || !strings.Contains(stderr, `no command "nothing"`) {
		t.Errorf("help of an unknown command: exit %d, %q", code, stderr)
	}
	if code, _, stderr := runMain(t, p, "frobnicate"); code != 2 || !strings.Contains(stderr, `unknown command "frobnicate"`) {
		t.Errorf("unknown command: exit %d, %q", code, stderr)
	}
	if code, _, _ := runMain(t, p); code != 2 {
		t.Errorf("no command: exit %d, want 2", code)
	}
}

// TestEveryFlagHasATwin checks the convention on the package's own commands.
func TestEveryFlagHasATwin(t *testing.T) {
	for _, c := range Commands() {
		fs := NewFlagSet(c.Name)
		c.Setup(fs)
		for _, f := range fs.Flags() {
			if !strings.HasPrefix(f.Env, "PLUGINHOST_") {
				t.Errorf("%s --%s has no PLUGINHOST_ environment twin (%q)", c.Name, f.Name, f.Env)
			}
		}
		var out bytes.Buffer
		writeUsage(&out, c)
		for _, f := range fs.Flags() {
			if !strings.Contains(out.String(), "--"+f.Name) || !strings.Contains(out.String(), f.Env) {
				t.Errorf("help %s does not list --%s with %s", c.Name, f.Name, f.Env)
			}
		}
	}
}

func TestExitCodes(t *testing.T) {
	tests := []struct {
		err  error
		code int
	}{
		{nil, 0},
		{Usagef("bad"), 2},
		{Exit(1), 1},
		{Exit(3), 3},
		{context.Canceled, 1},
	}
	for _, tt := range tests {
		p := &probe{failErr: tt.err}
		if code, _, _ := runMain(t, p, "probe"); code != tt.code {
			t.Errorf("error %v: exit %d, want %d", tt.err, code, tt.code)
		}
	}
}
