package cli

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"

	"pluginhost/models"
)

func version() Command {
	return Command{
		Name:    "version",
		Summary: "print the host version (compared with a package's min_host_version) and the build",
		Setup: func(fs *FlagSet) Runner {
			return func(ctx context.Context, out IO, args []string) error {
				fmt.Fprintf(out.Stdout, "pluginhost %s (ui_schema %d, %s", models.HostVersion, models.UISchema, runtime.Version())
				if rev := Revision(); rev != "" {
					fmt.Fprintf(out.Stdout, ", commit %s", rev)
				}
				fmt.Fprintln(out.Stdout, ")")
				return nil
			}
		},
	}
}

// Revision returns the version control revision the binary was built from
// (shortened, with "+dirty" for a modified tree), or "".
func Revision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" && dirty {
		rev += "+dirty"
	}
	return rev
}
