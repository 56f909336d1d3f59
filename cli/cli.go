// Package cli is pluginhost's command line: the commands a user and a plugin
// author type (token, keygen, package, validate, preview, version), and the
// conventions every command follows, serve included:
//
//   - every flag has an environment twin, used when the flag is not given;
//   - a value that does not parse or is out of range, from a flag or from the
//     environment, stops the command with an error naming it (exit 2);
//   - `pluginhost help COMMAND`, `pluginhost COMMAND -h` and `--help` print the
//     command's usage with every flag, its twin and its default;
//   - exit 0 is success, 1 a failure of the work (an invalid plugin), 2 a usage
//     or I/O error.
//
// serve is defined by the main package, which wires the server, and handed to
// Main with the others.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Command is one command of the binary.
type Command struct {
	// Name is what the user types: "serve", "token create".
	Name string
	// Args is the synopsis of the positional arguments ("PATH"), if any.
	// Main refuses positional arguments to a command whose Args is "".
	Args string
	// Summary says what the command does, in one line.
	Summary string
	// Detail is printed after the flags by help, if set.
	Detail string
	// Setup defines the command's flags and returns the function that runs it
	// with the positional arguments, once the flags are parsed.
	Setup func(fs *FlagSet) Runner
}

// Runner runs a command. It returns an error for exit 1, or a usage error
// (Usagef) for exit 2; Exit returns its own code.
type Runner func(ctx context.Context, io IO, args []string) error

// IO is where a command writes.
type IO struct {
	Stdout, Stderr io.Writer
}

// ErrHelp is returned by FlagSet.Parse for -h and --help.
var ErrHelp = errors.New("help requested")

// usageError marks an error of the command line: exit code 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// Usagef returns a usage error: the command was called wrongly (exit 2).
func Usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// Exit is an error that sets the exit code itself, after the command printed
// what it had to say.
type Exit int

func (e Exit) Error() string { return fmt.Sprintf("exit %d", int(e)) }

// Commands returns the commands of this package, in the order help lists them.
func Commands() []Command {
	return []Command{
		tokenCreate(), tokenList(), tokenRevoke(), keygen(), newCmd(), packageCmd(), buildCmd(), devCmd(), validate(), previewCmd(), runCmd(), version(), health(),
	}
}

// Main runs the command named by args with the package's commands and the
// extra ones (serve), and returns the exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer, extra ...Command) int {
	cmds := append(extra, Commands()...)
	out := IO{Stdout: stdout, Stderr: stderr}
	if len(args) == 0 {
		writeOverview(stderr, cmds)
		return 2
	}
	switch args[0] {
	case "help", "-h", "--help":
		if len(args) == 1 {
			writeOverview(stdout, cmds)
			return 0
		}
		c, _, ok := find(cmds, args[1:])
		if !ok {
			fmt.Fprintf(stderr, "pluginhost help: no command %q\n\n", strings.Join(args[1:], " "))
			writeOverview(stderr, cmds)
			return 2
		}
		writeUsage(stdout, c)
		return 0
	}
	c, rest, ok := find(cmds, args)
	if !ok {
		fmt.Fprintf(stderr, "pluginhost: unknown command %q\n\n", strings.Join(args, " "))
		writeOverview(stderr, cmds)
		return 2
	}
	fs := NewFlagSet(c.Name)
	runner := c.Setup(fs)
	pos, err := fs.Parse(rest)
	if errors.Is(err, ErrHelp) {
		writeUsage(stdout, c)
		return 0
	}
	if err == nil && c.Args == "" && len(pos) > 0 {
		err = Usagef("unexpected argument %q", pos[0])
	}
	if err == nil {
		err = runner(ctx, out, pos)
	}
	var exit Exit
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return int(exit)
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "pluginhost %s: %v\nRun 'pluginhost help %s' for usage.\n", c.Name, err, c.Name)
		return 2
	default:
		fmt.Fprintf(stderr, "pluginhost %s: %v\n", c.Name, err)
		return 1
	}
}

// find picks the command whose name is the longest prefix of args.
func find(cmds []Command, args []string) (Command, []string, bool) {
	best, n := Command{}, 0
	for _, c := range cmds {
		words := strings.Fields(c.Name)
		if len(words) > len(args) || len(words) <= n {
			continue
		}
		match := true
		for i, w := range words {
			match = match && args[i] == w
		}
		if match {
			best, n = c, len(words)
		}
	}
	return best, args[n:], n > 0
}

func writeOverview(w io.Writer, cmds []Command) {
	fmt.Fprint(w, "pluginhost hosts signed plugins.\n\nUsage:\n  pluginhost COMMAND [flags] [arguments]\n\nCommands:\n")
	width := 0
	for _, c := range cmds {
		width = max(width, len(c.Name))
	}
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.Name, c.Summary)
	}
	fmt.Fprint(w, "\nRun 'pluginhost help COMMAND' (or 'pluginhost COMMAND -h') for a command's flags.\n"+
		"Every flag has an environment twin, used when the flag is not given.\n")
}

// writeUsage prints a command's synopsis, summary and every flag with its
// environment twin and default.
func writeUsage(w io.Writer, c Command) {
	fs := NewFlagSet(c.Name)
	c.Setup(fs)
	flags := fs.Flags()
	fmt.Fprintf(w, "Usage: pluginhost %s", c.Name)
	if len(flags) > 0 {
		fmt.Fprint(w, " [flags]")
	}
	if c.Args != "" {
		fmt.Fprint(w, " "+c.Args)
	}
	fmt.Fprintf(w, "\n\n%s\n", c.Summary)
	if len(flags) > 0 {
		fmt.Fprint(w, "\nFlags (environment twin in brackets):\n")
		sorted := append([]*Flag(nil), flags...)
		sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
		for _, f := range sorted {
			arg := " VALUE"
			if f.isBool {
				arg = ""
			}
			fmt.Fprintf(w, "  --%s%s  [%s]\n      %s", f.Name, arg, f.Env, f.Usage)
			if f.Default != "" {
				fmt.Fprintf(w, " (default %s)", f.Default)
			}
			fmt.Fprintln(w)
		}
	}
	if c.Detail != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(c.Detail))
	}
}
