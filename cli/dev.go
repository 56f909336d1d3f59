package cli

import (
	"context"
	"crypto/ed25519"
	"os"
	"os/signal"
	"syscall"
	"time"

	"pluginhost/bundle"
	"pluginhost/devloop"
	"pluginhost/sandbox"
)

// devCmd is `pluginhost dev`: the author's loop against a running server.
func devCmd() Command {
	return Command{
		Name:    "dev",
		Summary: "watch a plugin folder: on every change build, validate, sign and install it on a running server",
		Detail: "On start and after every saved change of the folder (its dot folders and built modules aside), the\n" +
			"capabilities whose sources changed are built as pluginhost build does, the plugin is validated (each problem\n" +
			"with its file and JSON Pointer), signed with a development key (made once in DIR/.pluginhost/dev.key, which\n" +
			"packages leave out; the server is asked to trust it, which takes an admin's token, or add\n" +
			"DIR/.pluginhost/dev.pub to its --trusted-keys) and installed, or updated as version VERSION-dev.N: open /app\n" +
			"pages of it show the new version in place, keeping their state. A change that does not build, validate or\n" +
			"install is reported here and on the open pages, and the last good version keeps running.",
		Setup: func(fs *FlagSet) Runner {
			dir := fs.String("dir", "PLUGINHOST_DEV_DIR", ".", "the plugin folder")
			server := fs.String("server", "PLUGINHOST_SERVER", "http://127.0.0.1:8080", "the running server's base URL")
			token := fs.String("token", "PLUGINHOST_TOKEN", "", "your bearer token on that server (required; pluginhost token create)")
			keyPath := fs.String("key", "PLUGINHOST_DEV_KEY", "", "sign with this publisher key, PREFIX.key, instead of the development key")
			poll := fs.Bool("poll", "PLUGINHOST_DEV_POLL", false,
				"look at the folder every --interval instead of watching it (for a folder whose changes the system does not report, such as some shared folders of virtual machines)")
			interval := fs.Duration("interval", "PLUGINHOST_DEV_INTERVAL", devloop.DefaultInterval, 20*time.Millisecond, time.Minute,
				"how often the folder is looked at for changes with --poll, or where it cannot be watched (on systems other than Linux)")
			once := fs.Bool("once", "PLUGINHOST_DEV_ONCE", false, "build and install once, then stop (exit 1 when it is not installed)")
			cacheDir := fs.String("cache-dir", "PLUGINHOST_BUILD_CACHE_DIR", defaultCacheDir(), "folder of compiled modules")
			limits := SandboxFlags(fs)
			return func(ctx context.Context, out IO, args []string) error {
				ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
				defer stop()
				if *dir == "" || *token == "" {
					return Usagef("--token is required, and --dir must name the plugin folder")
				}
				var key ed25519.PrivateKey
				if *keyPath != "" {
					var err error
					if key, err = bundle.LoadPrivateKey(*keyPath); err != nil {
						return err
					}
				}
				engine, err := sandbox.New(ctx, *cacheDir, limits())
				if err != nil {
					return err
				}
				defer engine.Close(context.Background())
				l := &devloop.Loop{Dir: *dir, Server: *server, Token: *token, Key: key, Engine: engine, Poll: *poll, Interval: *interval, Out: out.Stdout}
				if *once {
					if err := l.Once(ctx); err != nil {
						return Exit(1)
					}
					return nil
				}
				return l.Run(ctx)
			}
		},
	}
}
