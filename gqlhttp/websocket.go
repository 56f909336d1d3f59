package gqlhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/gorilla/websocket"

	"pluginhost/auth"
	"pluginhost/live"
	"pluginhost/models"
)

// Websocket timing and sizes.
const (
	// DefaultInitTimeout is how long a client has to send connection_init.
	DefaultInitTimeout = 10 * time.Second
	// PingInterval is how often every connection gets a websocket ping.
	PingInterval = 20 * time.Second
	// PeerTimeout closes a connection that has sent nothing, not even a pong,
	// for this long: a dead peer.
	PeerTimeout = 2*PingInterval + 5*time.Second
	// MaxMessage bounds a message from a client.
	MaxMessage = 64 * 1024
)

// Sockets is the websocket side of /graphql: gorilla/websocket under gqlgen's
// transport, speaking graphql-transport-ws and the legacy graphql-ws. It
// authenticates in connection_init, pings every connection from one shared
// goroutine to find dead peers, and closes every connection on Shutdown.
type Sockets struct {
	auth *auth.Authenticator
	log  *slog.Logger
	// initTimeout is how long a client has to send connection_init.
	initTimeout time.Duration
	// limiter bounds the websockets open at once, per user and over the
	// server (MaxWebsocketsPerUser, MaxWebsockets).
	limiter *Limiter

	upgrader websocket.Upgrader
	mu       sync.Mutex
	conns    map[*wsConn]struct{}
	users    map[string]int // open, initialised websockets by user id
	reserved int            // places taken by upgrades under way (see reserve)
	closed   bool
	stop     chan struct{}
	done     chan struct{}
}

// newSockets starts the shared pinger; Shutdown stops it.
func newSockets(a *auth.Authenticator, lim *Limiter, initTimeout time.Duration, log *slog.Logger) *Sockets {
	s := &Sockets{
		auth: a, log: log, initTimeout: initTimeout, limiter: lim, conns: map[*wsConn]struct{}{}, users: map[string]int{}, stop: make(chan struct{}), done: make(chan struct{}),
		upgrader: websocket.Upgrader{
			HandshakeTimeout: 10 * time.Second,
			ReadBufferSize:   256, // client messages are small; larger ones are read in parts
			WriteBufferSize:  1024,
			WriteBufferPool:  &sync.Pool{}, // idle connections hold no write buffer
			// A token travels in connection_init, never in a cookie, so a
			// foreign page cannot act for a user: any origin may connect.
			CheckOrigin: func(*http.Request) bool { return true },
		},
	}
	go s.pinger()
	return s
}

// transport returns gqlgen's websocket transport on these sockets.
func (s *Sockets) transport() transport.Websocket {
	return transport.Websocket{
		Implementation: s,
		InitFunc:       s.init,
		InitTimeout:    s.initTimeout,
		ErrorFunc: func(ctx context.Context, err error) {
			var we transport.WebsocketError
			if errors.As(err, &we) && we.IsReadError {
				return // the peer went away
			}
			s.log.Debug("websocket error", "err", err)
		},
	}
}

// initForm is the close reason of a connection_init without a bearer token:
// the form it must have.
const initForm = `Forbidden: connection_init needs the payload {"Authorization": "Bearer <token>"}`

// init authenticates connection_init: {"Authorization": "Bearer <token>"}.
func (s *Sockets) init(ctx context.Context, payload transport.InitPayload) (context.Context, *transport.InitPayload, error) {
	header := payload.Authorization()
	if header == "" {
		for k, v := range payload {
			if strings.EqualFold(k, "authorization") {
				header, _ = v.(string)
			}
		}
	}
	// A refused connection closes with 4403 Forbidden, as graphql-transport-ws prescribes.
	if user, ok := auth.UserFrom(ctx); ok { // authenticated at the handshake (ServeAs)
		if c, ok := ctx.Value(upgradedKey{}).(*wsConn); ok && !s.countUser(c, user.ID) {
			return s.tooManySockets(ctx)
		}
		return live.WithConn(ctx, &live.Conn{}), nil, nil
	}
	// The close reason says what was wrong, and for a malformed payload
	// the form expected (a close reason holds at most 123 bytes).
	token, ok := auth.FromHeader(header)
	if !ok {
		return transport.AppendCloseReason(transport.WithWebsocketCloseCode(ctx, 4403), initForm), nil, errors.New(initForm)
	}
	c, _ := ctx.Value(upgradedKey{}).(*wsConn)
	client := ""
	if c != nil {
		client = c.client
	}
	id, err := s.auth.Bearer(ctx, client, token)
	if err != nil {
		reason := "Forbidden: the bearer token is not valid"
		if models.ErrorCode(err) == models.ErrTooManyRequests {
			reason = closeReason("Forbidden: " + models.ErrorMessage(err))
		}
		return transport.AppendCloseReason(transport.WithWebsocketCloseCode(ctx, 4403), reason), nil, errors.New(reason)
	}
	if c != nil {
		if !s.countUser(c, id.User.ID) {
			return s.tooManySockets(ctx)
		}
		c.token.Store(auth.HashToken(id.Credential))
		c.endAt(id.Ends)
	}
	ctx = auth.WithUser(ctx, id.User)
	return live.WithConn(ctx, &live.Conn{}), nil, nil
}

// closeReason cuts a close reason to the 123 bytes a close frame holds.
func closeReason(s string) string {
	if len(s) <= 123 {
		return s
	}
	cut := 123
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// tooManySockets refuses a websocket past the user's bound.
func (s *Sockets) tooManySockets(ctx context.Context) (context.Context, *transport.InitPayload, error) {
	return transport.AppendCloseReason(transport.WithWebsocketCloseCode(ctx, CloseUserSocketLimit), "too many websockets for this user"),
		nil, fmt.Errorf("this user already holds %d websockets, the most allowed", s.limits().MaxWebsocketsPerUser)
}

func (s *Sockets) limits() *Limits { return &s.limiter.Limits }

// countUser counts c as one of the user's websockets, unless the user holds
// MaxWebsocketsPerUser already.
func (s *Sockets) countUser(c *wsConn, user string) bool {
	max := s.limits().MaxWebsocketsPerUser
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.users[user] >= max {
		return false
	}
	s.users[user]++
	c.user = user
	return true
}

// subprotocols are the GraphQL websocket protocols gqlgen speaks.
var subprotocols = []string{"graphql-transport-ws", "graphql-ws"}

type upgradedKey struct{}

// serve upgrades a websocket request and hands the connection to gqlgen
// (gql) on a goroutine of its own, so that net/http's goroutine, buffers and
// request (about 10 KiB) are released instead of living as long as the
// socket. A handshake already authenticated as user, with token (the web
// host's pages), needs no token in connection_init, and the token's end
// closes the socket.
func (s *Sockets) serve(w http.ResponseWriter, r *http.Request, gql http.Handler, user *models.User, token string) {
	u := s.upgrader
	u.Subprotocols = subprotocols
	reserved := s.reserve()
	ws, err := u.Upgrade(w, r, nil)
	if err != nil {
		if reserved {
			s.unreserve()
		}
		return // the upgrader has answered the client
	}
	c, err := s.register(ws, reserved)
	if err != nil {
		return
	}
	c.client = auth.ClientAddress(r, s.auth.TrustedProxies)
	if token != "" {
		c.token.Store(auth.HashToken(token))
		if id, err := s.auth.Bearer(r.Context(), c.client, token); err == nil {
			c.endAt(id.Ends)
		}
	}
	// gqlgen needs only the upgrade header to pick its websocket transport,
	// which takes the connection from the context (see Accept).
	base := context.Background()
	if user != nil {
		base = auth.WithUser(base, user)
	}
	req := upgraded.WithContext(context.WithValue(base, upgradedKey{}, c))
	go gql.ServeHTTP(discard{}, req)
}

// upgraded is the request gqlgen gets for an upgraded socket, each with its
// own context; gqlgen only reads it, and keeps it (and its header) for the
// socket's life, so its parts are shared.
var upgraded = &http.Request{Method: http.MethodGet, URL: &url.URL{Path: "/graphql"}, Header: http.Header{"Upgrade": {"websocket"}}}

// discard is the ResponseWriter of an upgraded request: nothing is written
// through it any more.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}

// Accept returns the connection Serve upgraded; it implements
// transport.WebsocketImplementation.
func (s *Sockets) Accept(w http.ResponseWriter, r *http.Request, opts transport.WebsocketAcceptOptions) (transport.WebsocketConn, error) {
	c, ok := r.Context().Value(upgradedKey{}).(*wsConn)
	if !ok {
		return nil, errors.New("websocket: the request was not upgraded by Sockets.Serve")
	}
	return c, nil
}

// register sets a new connection up and records it.
func (s *Sockets) register(ws *websocket.Conn, reserved bool) (*wsConn, error) {
	c := &wsConn{ws: ws, owner: s, active: map[string]bool{}}
	ws.SetReadLimit(MaxMessage)
	ws.SetReadDeadline(time.Now().Add(PeerTimeout))
	ws.SetPongHandler(func(string) error { return ws.SetReadDeadline(time.Now().Add(PeerTimeout)) })
	s.mu.Lock()
	if reserved {
		s.reserved--
	}
	if s.closed {
		s.mu.Unlock()
		ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, "server shutting down"), time.Now().Add(time.Second))
		ws.Close()
		return nil, errors.New("server shutting down")
	}
	if !reserved {
		s.mu.Unlock()
		ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(CloseServerSocketLimit,
			"the server holds too many websockets; try again later"), time.Now().Add(time.Second))
		ws.Close()
		return nil, errors.New("websocket limit")
	}
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	return c, nil
}

// reserve takes a place among the server's websockets before the upgrade
// is answered, so that a client that sees its upgrade accepted is counted
// before the next one is; it reports false when the server is full or
// shutting down.
func (s *Sockets) reserve() bool {
	max := s.limits().MaxWebsockets
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || len(s.conns)+s.reserved >= max {
		return false
	}
	s.reserved++
	return true
}

// unreserve gives back a place taken by reserve for an upgrade that failed.
func (s *Sockets) unreserve() {
	s.mu.Lock()
	s.reserved--
	s.mu.Unlock()
}

// Connections returns how many websockets are open.
func (s *Sockets) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

func (s *Sockets) pinger() {
	defer close(s.done)
	t := time.NewTicker(PingInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.mu.Lock()
		conns := make([]*wsConn, 0, len(s.conns))
		for c := range s.conns {
			conns = append(conns, c)
		}
		s.mu.Unlock()
		deadline := time.Now().Add(5 * time.Second)
		for _, c := range conns {
			if err := c.ws.WriteControl(websocket.PingMessage, nil, deadline); err != nil {
				c.Close()
			}
		}
	}
}

// Shutdown closes every websocket with the protocol's "going away" close
// (1001), which tells graphql-ws clients to reconnect, to another replica,
// and resubscribe; subscriptions are not ended with an error first, which
// clients would take as final. It stops the pinger; connections upgraded
// later are closed the same way at once.
func (s *Sockets) Shutdown() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	conns := make([]*wsConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	close(s.stop)
	<-s.done
	for _, c := range conns {
		c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, "server shutting down"), time.Now().Add(time.Second))
		c.Close()
	}
}

// endAt closes the connection when its token expires (never, for a zero
// time), with 4403 Forbidden as for a refused connection_init.
func (c *wsConn) endAt(ends time.Time) {
	if ends.IsZero() {
		return
	}
	t := time.AfterFunc(time.Until(ends), func() { c.forbid("the token expired") })
	c.pmu.Lock()
	c.expiry = t
	c.pmu.Unlock()
}

// forbid closes the connection with 4403 Forbidden and the reason.
func (c *wsConn) forbid(reason string) {
	c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(4403, "Forbidden: "+reason), time.Now().Add(time.Second))
	c.Close()
}

// CloseToken closes every websocket that authenticated with the token of
// this hash (revoked), with 4403 Forbidden as for a refused connection_init.
func (s *Sockets) CloseToken(hash string) {
	s.mu.Lock()
	var conns []*wsConn
	for c := range s.conns {
		if h, _ := c.token.Load().(string); h == hash {
			conns = append(conns, c)
		}
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.forbid("the token was revoked")
	}
}

// wsConn adapts a gorilla connection to gqlgen's transport.
type wsConn struct {
	ws     *websocket.Conn
	owner  *Sockets
	wmu    sync.Mutex // one writer at a time
	once   sync.Once
	token  atomic.Value // string: the hash of the token connection_init gave
	user   string       // the authenticated user, once counted
	client string       // the client's address (auth.ClientAddress)

	pmu    sync.Mutex
	inited bool            // connection_init was received
	active map[string]bool // ids of operations in progress
	expiry *time.Timer     // closes the connection when its token expires
}

// Close codes of the graphql-transport-ws protocol that the host enforces
// itself, for both subprotocols.
const (
	closeInvalidMessage    = 4400
	closeUnauthorized      = 4401
	closeDuplicateID       = 4409
	closeTooManyInitialise = 4429
)

// envelope is what the protocol checks read of a client message.
type envelope struct {
	Type *string `json:"type"`
	ID   *string `json:"id"`
}

// NextReader reads the next message whole (within MaxMessage) and checks it
// against the protocol before gqlgen sees it: a message that is not a JSON
// object with a known type closes 4400, a second connection_init 4429, an
// operation before connection_init 4401, and an operation id already in
// progress 4409, as graphql-transport-ws prescribes.
func (c *wsConn) NextReader() (int, io.Reader, error) {
	t, r, err := c.ws.NextReader()
	if err != nil {
		if websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway, websocket.CloseNoStatusReceived) {
			return t, nil, transport.ErrWebsocketClosed
		}
		return t, nil, err
	}
	c.ws.SetReadDeadline(time.Now().Add(PeerTimeout))
	b, err := io.ReadAll(r)
	if err != nil {
		return t, nil, err
	}
	if code, reason := c.check(b); code != 0 {
		c.WriteClose(code, reason)
		c.Close()
		return t, nil, transport.ErrWebsocketClosed
	}
	return t, bytes.NewReader(b), nil
}

// check applies the protocol rules to one client message.
func (c *wsConn) check(b []byte) (int, string) {
	var e envelope
	if err := json.Unmarshal(b, &e); err != nil || e.Type == nil {
		return closeInvalidMessage, "Invalid message received"
	}
	c.pmu.Lock()
	defer c.pmu.Unlock()
	switch *e.Type {
	case "connection_init":
		if c.inited {
			return closeTooManyInitialise, "Too many initialisation requests"
		}
		c.inited = true
	case "subscribe", "start":
		if e.ID == nil || *e.ID == "" {
			return closeInvalidMessage, "Invalid message received: an operation needs an id"
		}
		if !c.inited {
			return closeUnauthorized, "Unauthorized"
		}
		if c.active[*e.ID] {
			return closeDuplicateID, "Subscriber for " + truncate(*e.ID, 64) + " already exists"
		}
		if len(c.active) >= maxOperationsPerSocket {
			return closeInvalidMessage, "too many operations in progress on this websocket"
		}
		c.active[*e.ID] = true
	case "complete", "stop":
		if e.ID != nil {
			delete(c.active, *e.ID)
		}
	case "ping", "pong", "connection_terminate":
	default:
		return closeInvalidMessage, "Invalid message received: unknown type"
	}
	return 0, ""
}

// maxOperationsPerSocket bounds the operation ids one websocket tracks; the
// subscriptions among them are bounded lower by the hub.
const maxOperationsPerSocket = 1000

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// ended forgets an operation id once the server has completed it.
func (c *wsConn) ended(v any) {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Struct {
		return
	}
	typ, id := rv.FieldByName("Type"), rv.FieldByName("ID")
	if !typ.IsValid() || !id.IsValid() || typ.Kind() != reflect.String || id.Kind() != reflect.String {
		return
	}
	if t := typ.String(); t == "complete" || t == "error" {
		c.pmu.Lock()
		delete(c.active, id.String())
		c.pmu.Unlock()
	}
}

func (c *wsConn) WriteJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.ended(v)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return c.ws.WriteMessage(websocket.TextMessage, b)
}

func (c *wsConn) WriteClose(code int, message string) error {
	return c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, message), time.Now().Add(time.Second))
}

func (c *wsConn) Subprotocol() string { return c.ws.Subprotocol() }

func (c *wsConn) SetReadLimit(limit int64) {
	if limit > 0 && limit < MaxMessage {
		c.ws.SetReadLimit(limit)
	}
}

func (c *wsConn) SetReadDeadline(t time.Time) error {
	if t.IsZero() {
		t = time.Now().Add(PeerTimeout)
	}
	return c.ws.SetReadDeadline(t)
}

func (c *wsConn) Close() error {
	var err error
	c.once.Do(func() {
		c.owner.mu.Lock()
		delete(c.owner.conns, c)
		if c.user != "" {
			if c.owner.users[c.user]--; c.owner.users[c.user] <= 0 {
				delete(c.owner.users, c.user)
			}
		}
		c.owner.mu.Unlock()
		c.pmu.Lock()
		if c.expiry != nil {
			c.expiry.Stop()
		}
		c.pmu.Unlock()
		err = c.ws.Close()
	})
	return err
}
