package cli

import (
	"context"

	"pluginhost/pluginbuild"
	"pluginhost/sandbox"
)

// buildCmd is `pluginhost build`: the capabilities of a plugin folder, from
// their sources to pre-initialized modules.
func buildCmd() Command {
	return Command{
		Name:    "build",
		Summary: "build the capabilities of a plugin folder from their sources (Go or C) into pre-initialized modules",
		Detail: "Every capability whose manifest entry names \"source\" is built into the reactor module its \"module\" names:\n" +
			"a folder holding a Go main package that imports pluginhost/kit with GOOS=wasip1 GOARCH=wasm go build\n" +
			"-buildmode=c-shared (a folder in a Go module with that module's dependencies: a folder made by pluginhost new\n" +
			"reaches the kit in its kit/ folder, which build keeps this binary's), a folder of C files with clang\n" +
			"--target=wasm32-wasi -mexec-model=reactor (apt-get install " + pluginbuild.CPackages + ").\n" +
			"Each module is then pre-initialized: its initialization is run once, with a fixed clock and no randomness,\n" +
			"and its resulting memory and globals are written into the module, so that each run starts initialized. The\n" +
			"same sources and toolchain give the same bytes. Before anything is read or written, the paths the manifest\n" +
			"names are checked by the validator's rules: nothing is read or written outside the folder, through .. or a\n" +
			"symbolic link.",
		Setup: func(fs *FlagSet) Runner {
			dir := fs.String("dir", "PLUGINHOST_BUILD_DIR", ".", "the plugin folder")
			cacheDir := fs.String("cache-dir", "PLUGINHOST_BUILD_CACHE_DIR", defaultCacheDir(), "folder of compiled modules")
			limits := SandboxFlags(fs)
			return func(ctx context.Context, out IO, args []string) error {
				if *dir == "" {
					return Usagef("--dir is empty: give the plugin folder")
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
