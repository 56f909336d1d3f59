package cli

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"os"

	"pluginhost/bundle"
	"pluginhost/validator"
)

func keygen() Command {
	return Command{
		Name:    "keygen",
		Summary: "write an Ed25519 publisher key pair: PREFIX.key (private, mode 0600) and PREFIX.pub",
		Setup: func(fs *FlagSet) Runner {
			out := fs.String("out", "PLUGINHOST_KEYGEN_OUT", "", "path prefix of the key pair (required)")
			return func(ctx context.Context, io IO, args []string) error {
				if *out == "" {
					return Usagef("--out PREFIX is required")
				}
				pub, err := bundle.GenerateKey(*out)
				if err != nil {
					return err
				}
				fmt.Fprintf(io.Stdout, "wrote %s.key (private, keep it secret) and %s.pub (key id %s)\n", *out, *out, bundle.KeyID(pub))
				return nil
			}
		},
	}
}

func packageCmd() Command {
	return Command{
		Name:    "package",
		Summary: "validate a plugin source folder, then write it as a signed package file",
		Setup: func(fs *FlagSet) Runner {
			dir := fs.String("dir", "PLUGINHOST_PACKAGE_DIR", ".", "plugin source folder")
			keyPath := fs.String("key", "PLUGINHOST_PACKAGE_KEY", "", "publisher private key, PREFIX.key (required)")
			out := fs.String("out", "PLUGINHOST_PACKAGE_OUT", "", "package file to write (required)")
			return func(ctx context.Context, io IO, args []string) error {
				if *dir == "" || *keyPath == "" || *out == "" {
					return Usagef("--key and --out are required, and --dir must name the plugin source folder")
				}
				folder, err := bundle.ReadPlugin(*dir)
				if err != nil {
					return err
				}
				files := folder.Files
				m, report := validator.CheckPlugin(files)
				report.LeftOut = folder.LeftOut
				if !report.Valid {
					report.WriteText(io.Stdout)
					return fmt.Errorf("%s is not a valid plugin (%d errors); nothing was packaged", *dir, len(report.Errors))
				}
				key, err := bundle.LoadPrivateKey(*keyPath)
				if err != nil {
					return err
				}
				pkg, err := bundle.Build(files, key)
				if err != nil {
					return err
				}
				if err := os.WriteFile(*out, pkg, 0o644); err != nil {
					return err
				}
				fmt.Fprintf(io.Stdout, "packaged %s %s (%d files, %d bytes) signed by key %s into %s\n",
					m.ID, m.Version, len(files), len(pkg), bundle.KeyID(key.Public().(ed25519.PublicKey)), *out)
				if len(folder.LeftOut) > 0 {
					fmt.Fprintf(io.Stdout, "left out (%d files the manifest does not name): %s\n", len(folder.LeftOut), validator.ListSome(folder.LeftOut, 8))
				}
				return nil
			}
		},
	}
}
