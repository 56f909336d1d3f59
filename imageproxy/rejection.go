package imageproxy

import "fmt"

// Reasons of a rejection: the closed list of the public contract (CONTRACT.md,
// "image rejected by a rule of the proxy"). The REST answer carries one of them
// as error.reason.
const (
	// ReasonInvalidURL: the URL is not absolute, has userinfo, no host, a port
	// other than 443, a host that is not a valid (IDNA) name or IP literal, or a
	// numeric host in any form but a dotted quad; also a request body without
	// a URL.
	ReasonInvalidURL = "invalid_url"
	// ReasonNotHTTPS: the scheme is not https.
	ReasonNotHTTPS = "not_https"
	// ReasonBlockedAddress: the host is, resolves to, or was about to be
	// connected to an address outside public unicast.
	ReasonBlockedAddress = "blocked_address"
	// ReasonRedirect: the upstream answered with a 3xx; redirects are never followed.
	ReasonRedirect = "redirect"
	// ReasonUpstreamStatus: the upstream did not deliver a sound 200 answer: another
	// status, a name that does not resolve, a refused or failed connection or TLS
	// handshake, a broken response.
	ReasonUpstreamStatus = "upstream_status"
	// ReasonTimeout: the connect, the TLS handshake, the response headers or the
	// whole fetch took longer than its limit.
	ReasonTimeout = "timeout"
	// ReasonTooLarge: the body is larger than the limit (declared or streamed).
	ReasonTooLarge = "too_large"
	// ReasonUnsupportedFormat: the Content-Type is not one of the four image
	// types, or the body is not PNG, JPEG, GIF or WebP (or is a JPEG coding
	// process the decoder does not implement).
	ReasonUnsupportedFormat = "unsupported_format"
	// ReasonFormatMismatch: the Content-Type names a different supported
	// format than the magic bytes of the body.
	ReasonFormatMismatch = "format_mismatch"
	// ReasonDimensions: the width or the height is above the limit.
	ReasonDimensions = "dimensions"
	// ReasonFrames: more frames than the limit.
	ReasonFrames = "frames"
	// ReasonPixels: width x height x frames above the limit.
	ReasonPixels = "pixels"
)

// reasonCorrupt is the reason given to a file whose magic bytes and
// Content-Type agree on a supported format but whose structure is broken:
// truncated, a chunk or segment that runs past the end, a bad checksum, frame
// headers that disagree (APNG acTL against fcTL), or a first frame that does
// not decode.
//
// The contract's list is closed, so there is no "corrupt" reason. Such a body
// is not a valid PNG, JPEG, GIF or WebP file, which is what unsupported_format
// says to a client; upstream_status would point it at the HTTP answer, which
// was fine. The Detail (logged) says "corrupt file".
const reasonCorrupt = ReasonUnsupportedFormat

// Rejection is the error Fetch returns when the URL or the fetched image
// breaks a rule of the proxy. Reason is one of the Reason constants; Detail
// says what exactly, for logs (it never holds the fetched body, nor the URL's
// path or query); Host is the URL's host once known.
type Rejection struct {
	Reason string
	Detail string
	Host   string
}

func (r *Rejection) Error() string {
	return "image rejected: " + r.Reason + ": " + r.Detail
}

func reject(reason, format string, args ...any) *Rejection {
	return &Rejection{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

func corrupt(format string, args ...any) *Rejection {
	return &Rejection{Reason: reasonCorrupt, Detail: "corrupt file: " + fmt.Sprintf(format, args...)}
}
