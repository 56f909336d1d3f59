//go:build !wasm

package kit

import "embed"

// Source holds the kit's own source files, for pluginhost build to build a
// capability whose folder is not in a Go module of its own: it gives it a
// module that requires this package. It is not part of a capability built
// for WebAssembly.
//
//go:embed kit.go request.go result.go warm.go
var Source embed.FS
