//go:build !wasm

package kit

import "embed"

// Source holds the kit's own source files (tests and this file among them),
// for pluginhost new and pluginhost build to give a plugin folder the kit of
// the binary as a Go module of its own. It is not part of a capability built
// for WebAssembly.
//
//go:embed *.go
var Source embed.FS
