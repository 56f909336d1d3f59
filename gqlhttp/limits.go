package gqlhttp

import "time"

// Defaults of the bounds on GraphQL requests and websockets. Each is a field of
// Limits, set by a flag of `pluginhost serve` with its environment twin (see
// the README's "Limits" section). A client that passes one gets
// BAD_USER_INPUT with extensions.reason naming the limit (HTTP 413 for an
// oversized body, 408 for a body that is not sent in time, 429 for too many
// requests of one user at once, 503 when the server is full), or a websocket
// close code: 1008 for a user's websocket cap, 1013 for the server's.
const (
	// DefaultMaxBodyBytes bounds a GraphQL request body: room for the base64
	// of the largest package (16 MiB, so 21⅓ MiB of base64) and the rest of
	// the request.
	DefaultMaxBodyBytes = 22 << 20
	// DefaultBodyReadTimeout is how long a client has to send a request
	// body, from the end of its headers.
	DefaultBodyReadTimeout = 30 * time.Second
	// DefaultMaxJSONDepth bounds the nesting of a request body's JSON
	// (variables included): a stored value nests at most a few levels.
	DefaultMaxJSONDepth = 64
	// DefaultMaxQueryBytes bounds the text of one GraphQL document.
	DefaultMaxQueryBytes = 32 << 10
	// DefaultMaxQueryTokens bounds the lexical tokens of one document, before
	// it is parsed further.
	DefaultMaxQueryTokens = 4000
	// DefaultMaxQueryFields bounds the fields one operation selects, with
	// fragments expanded, before the document is validated: validation
	// compares fields pairwise.
	DefaultMaxQueryFields = 500
	// DefaultMaxQueryCost bounds the cost of an operation (see cost.go): each
	// object costs 1 times the size of the lists around it, expensive fields
	// their weight.
	DefaultMaxQueryCost = 10000
	// DefaultMaxResponseBytes bounds the data one operation may produce.
	DefaultMaxResponseBytes = 8 << 20
	// DefaultQueryCacheBytes bounds the memory of parsed documents kept.
	DefaultQueryCacheBytes = 32 << 20
	// DefaultAPQCacheBytes bounds the memory of persisted query texts kept.
	DefaultAPQCacheBytes = 8 << 20
	// DefaultMaxInFlight bounds the GraphQL HTTP requests served at once;
	// more wait up to InFlightWait, then get 503.
	DefaultMaxInFlight = 64
	// DefaultMaxInFlightPerUser bounds the GraphQL HTTP requests one user has
	// served at once; more wait up to InFlightWait, then get 429.
	DefaultMaxInFlightPerUser = 4
	// DefaultMaxInFlightBodyBytes bounds the request bodies held in memory at
	// once, over every request.
	DefaultMaxInFlightBodyBytes = 64 << 20
	// DefaultInFlightWait is how long a request waits for its turn.
	DefaultInFlightWait = 5 * time.Second
	// DefaultUserWorkPerSecond is the work one user may have the server do
	// per second, in units: RequestWork per GraphQL request, one per KiB of
	// request body, and each operation's cost. Past it a request waits up
	// to InFlightWait, then is refused (429, or TOO_MANY_REQUESTS). A user
	// may spend a burst of twice MaxQueryCost plus the largest body at once.
	DefaultUserWorkPerSecond = 10000
	// WorkPeers is how recently another user must have spent work for the
	// work rate to hold a user back: alone, a user is not made to wait.
	WorkPeers = time.Second
	// RequestWork is the work charged for any GraphQL request, even one
	// refused by another bound: parsing and checking cost too.
	RequestWork = 10
	// DefaultMaxWebsockets bounds the websockets open at once on a server.
	DefaultMaxWebsockets = 20000
	// DefaultMaxWebsocketsPerUser bounds the websockets one user holds open.
	DefaultMaxWebsocketsPerUser = 32
)

// Websocket close codes of the limits, besides those of the protocols.
const (
	// CloseUserSocketLimit closes a connection whose user already holds
	// MaxWebsocketsPerUser (1008, policy violation).
	CloseUserSocketLimit = 1008
	// CloseServerSocketLimit closes a connection beyond MaxWebsockets (1013,
	// try again later).
	CloseServerSocketLimit = 1013
)

// Limits are the bounds on GraphQL requests and websockets; zero fields take
// the defaults above.
type Limits struct {
	MaxBodyBytes         int64
	BodyReadTimeout      time.Duration
	MaxJSONDepth         int
	MaxQueryBytes        int
	MaxQueryTokens       int
	MaxQueryFields       int
	MaxQueryCost         int
	MaxResponseBytes     int64
	QueryCacheBytes      int64
	APQCacheBytes        int64
	MaxInFlight          int
	MaxInFlightPerUser   int
	MaxInFlightBodyBytes int64
	InFlightWait         time.Duration
	UserWorkPerSecond    int
	MaxWebsockets        int
	MaxWebsocketsPerUser int
}

// withDefaults returns l with every zero field set to its default.
func (l Limits) withDefaults() Limits {
	setDefault(&l.MaxBodyBytes, DefaultMaxBodyBytes)
	setDefault(&l.BodyReadTimeout, DefaultBodyReadTimeout)
	setDefault(&l.MaxJSONDepth, DefaultMaxJSONDepth)
	setDefault(&l.MaxQueryBytes, DefaultMaxQueryBytes)
	setDefault(&l.MaxQueryTokens, DefaultMaxQueryTokens)
	setDefault(&l.MaxQueryFields, DefaultMaxQueryFields)
	setDefault(&l.MaxQueryCost, DefaultMaxQueryCost)
	setDefault(&l.MaxResponseBytes, DefaultMaxResponseBytes)
	setDefault(&l.QueryCacheBytes, DefaultQueryCacheBytes)
	setDefault(&l.APQCacheBytes, DefaultAPQCacheBytes)
	setDefault(&l.MaxInFlight, DefaultMaxInFlight)
	setDefault(&l.MaxInFlightPerUser, DefaultMaxInFlightPerUser)
	setDefault(&l.MaxInFlightBodyBytes, DefaultMaxInFlightBodyBytes)
	setDefault(&l.InFlightWait, DefaultInFlightWait)
	setDefault(&l.UserWorkPerSecond, DefaultUserWorkPerSecond)
	setDefault(&l.MaxWebsockets, DefaultMaxWebsockets)
	setDefault(&l.MaxWebsocketsPerUser, DefaultMaxWebsocketsPerUser)
	return l
}

// setDefault sets *v to d when it is zero or negative.
func setDefault[T int | int64 | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}
