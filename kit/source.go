//go:build !wasm

package kit

import "embed"

// Source holds the kit's source files as a plugin has them: pluginhost new
// and pluginhost build write them into the plugin folder as a Go module of
// its own, and the reference (docs/kit.md) is made from them. It is not part
// of a capability built for WebAssembly.
//
//go:embed kit.go decode.go marshal.go request.go result.go scan.go unmarshal.go warm.go
var Source embed.FS
