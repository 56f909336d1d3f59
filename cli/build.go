package cli

import (
	"context"

	"pluginhost/pluginbuild"
	"pluginhost/sandbox"
)

// buildCmd is `pluginhost build`: the capabilities of a plugin folder, from
// their Go sources to pre-initialized modules.
func buildCmd() Command {
	return Command{
		Name:    "build",
		Summary: "build the capabilities of a plugin folder from their Go sources into pre-initialized modules",
		Detail: "Every capability whose manifest entry names \"source\" (a folder of the plugin holding a Go main package\n" +
			"that imports pluginhost/kit) is built with GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared into the\n" +
			"reactor module its \"module\" names, then pre-initialized: its initialization is run once, with a fixed\n" +
			"clock and no randomness, and its resulting memory and globals are written into the module, so that each\n" +
			"run starts initialized. The same sources and Go toolchain give the same bytes. Needs Go on the PATH.",
		Setup: func(fs *FlagSet) Runner {
			dir := fs.String("dir", "PLUGINHOST_BUILD_DIR", "", "the plugin folder (required)")
			cacheDir := fs.String("cache-dir", "PLUGINHOST_BUILD_CACHE_DIR", defaultCacheDir(), "folder of compiled modules")
			limits := SandboxFlags(fs)
			return func(ctx context.Context, out IO, args []string) error {
				if *dir == "" {
					return Usagef("--dir is required")
				}
				engine, err := sandbox.New(ctx, *cacheDir, limits())
				if err != nil {
					return err
				}
				defer engine.Close(context.Background())
				_, err = pluginbuild.Build(ctx, *dir, engine, out.Stdout)
				return err
			}
		},
	}
}
