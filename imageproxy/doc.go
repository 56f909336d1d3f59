// Package imageproxy is the UI image proxy behind
// POST /v1/plugin-instances/{instance_id}/ui-images:fetch: it fetches an
// image from a public HTTPS URL and hands back only bytes it has verified.
//
// A Fetcher fetches and verifies one image; a Proxy is its HTTP side, with a
// per-user rate limit and a bound on fetches in flight. The REST layer
// authenticates the caller and checks the Instance and its network grant,
// then calls Proxy.Serve.
//
// # Reading order
//
// As in go-camo, one file holds the request path: fetch.go, from the URL
// check to the verified image, in the order Fetcher.Fetch runs it. addr.go
// holds the address deny list as data and the dial-time check; inspect.go
// reads image headers and counts frames; proxy.go writes the HTTP answers.
//
// # Decisions
//
// Address ranges: an own table (addr.go), not a library. Issue 7 names the
// ranges to refuse, and a table of netip.Prefix rows is short enough to be
// checked against that list line by line and tested row by row. Libraries
// considered: code.dny.dev/ssrf is maintained and generated from the IANA
// registries, but its policy is its own (what it allows is decided by its
// generator and changes with its releases), so matching it to the issue's
// list would need the same row-by-row test as owning the table, plus a
// dependency in the security path. The table is a deny list of the IANA
// special-purpose ranges the issue names, plus 192.88.99.0/24, 100::/64 and
// 2001::/23, and IPv6 is further limited to global unicast 2000::/3, so
// anything outside public unicast is refused.
//
// Where addresses are checked: twice. Fetch resolves the host first and
// refuses a denied address without dialling (fail fast, and the detail
// names the range). The authoritative check is the net.Dialer Control of
// every connection, on the IP about to be connected: the transport's dial
// resolves again, so a DNS answer that changes in between (rebinding) meets
// the Control. A host with any denied address is refused as a whole. No
// proxy from the environment is used, and redirects are never followed.
//
// Numeric hosts: only a dotted-quad IPv4 or a bracketed IPv6 literal is an
// address. Other numeric forms (2130706433, 0x7f000001, 0177.0.0.1, 127.1)
// are refused as invalid_url rather than interpreted, since clients disagree
// on what they mean.
//
// Corrupt files: the contract's reasons are a closed list with no "corrupt".
// A file whose Content-Type and magic bytes agree on a supported format but
// which is truncated, has a chunk or segment running past its end, frame
// headers that disagree (APNG acTL against fcTL) or a first frame that does
// not decode, is refused as unsupported_format: the body is not a valid file
// of a supported format. upstream_status would point a client at the HTTP
// answer, which was fine, and format_mismatch at declarations that disagree.
// The Detail (logged) says "corrupt file". See reasonCorrupt.
//
// Limits from headers first: size, frames and pixels are read from the
// headers (IHDR/acTL/fcTL, the GIF screen and image descriptors, the JPEG
// SOF, the WebP VP8/VP8L/VP8X headers and ANMF chunks) without decoding any
// frame, and refused before a pixel buffer exists, even when a later part
// of the file is broken. Only then is the first frame decoded in full. An
// animated WebP's first frame is decoded by wrapping its ANMF bitstream in
// a RIFF of its own, since golang.org/x/image/webp has no animation.
//
// Memory: each first-frame decode weighs its estimated buffers (from the
// headers, per decoder: see inspect.go) against Fetcher.MaxDecodeMemory, a
// weighted semaphore; a decode heavier than the whole bound waits to run
// alone. Bodies are read into one buffer sized from Content-Length.
//
// Rate and concurrency: each user has a token bucket (10 requests a second,
// burst 20 by default: a screen of images at once, then a trickle); the
// proxy runs at most 8 fetches at once and a request waits at most 5 s for
// a slot. Either limit answers 429 with code RATE_LIMITED and Retry-After.
// Fetches in flight bound the bodies held (8 x 512 KiB), the decode bound
// the pixel buffers (16 MiB); BenchmarkConcurrentFetchMemory measures the
// two together.
//
// Request body: the endpoint's body is {"url": "..."}, at most 8 KiB. A body
// that is not that JSON is refused as 422 invalid_url: for the renderer it
// is one more image that cannot be shown, and the storage code
// PLUGIN_STORAGE_INVALID would mislead.
//
// Answers: 200 carries only the verified bytes with Content-Type of the
// verified format, Content-Length, X-Content-Type-Options: nosniff,
// Content-Security-Policy: default-src 'none'; sandbox, Content-Disposition:
// inline and Cache-Control: private, max-age=300 (the answer is per user).
// A rejection is 422 UI_IMAGE_REJECTED with the reason and a fixed message
// per reason; the detail, which may name internal addresses, is only logged,
// with the host and reason and never the URL's path or query or the body.
package imageproxy
