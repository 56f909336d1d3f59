package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/gorilla/websocket"

	"pluginhost/auth"
	"pluginhost/live"
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
	Auth *auth.Service
	Log  *slog.Logger
	// InitTimeout is how long a client has to send connection_init.
	InitTimeout time.Duration

	upgrader websocket.Upgrader
	mu       sync.Mutex
	conns    map[*wsConn]struct{}
	closed   bool
	stop     chan struct{}
	done     chan struct{}
}

// NewSockets starts the shared pinger; Shutdown stops it.
func NewSockets(a *auth.Service, log *slog.Logger) *Sockets {
	s := &Sockets{
		Auth: a, Log: log, InitTimeout: DefaultInitTimeout, conns: map[*wsConn]struct{}{}, stop: make(chan struct{}), done: make(chan struct{}),
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

// Transport returns gqlgen's websocket transport on these sockets.
func (s *Sockets) Transport() transport.Websocket {
	return transport.Websocket{
		Implementation: s,
		InitFunc:       s.init,
		InitTimeout:    s.InitTimeout,
		ErrorFunc: func(ctx context.Context, err error) {
			var we transport.WebsocketError
			if errors.As(err, &we) && we.IsReadError {
				return // the peer went away
			}
			s.Log.Debug("websocket error", "err", err)
		},
	}
}

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
	forbidden := transport.AppendCloseReason(transport.WithWebsocketCloseCode(ctx, 4403), "Forbidden")
	token, ok := auth.FromHeader(header)
	if !ok {
		return forbidden, nil, errors.New(`connection_init needs {"Authorization": "Bearer <token>"}`)
	}
	user, err := s.Auth.Authenticate(ctx, token)
	if err != nil {
		return forbidden, nil, errors.New("the bearer token is not valid")
	}
	ctx = auth.WithUser(ctx, user)
	return live.WithConn(ctx, &live.Conn{}), nil, nil
}

// subprotocols are the GraphQL websocket protocols gqlgen speaks.
var subprotocols = []string{"graphql-transport-ws", "graphql-ws"}

type upgradedKey struct{}

// Serve upgrades a websocket request and hands the connection to gqlgen on a
// goroutine of its own, so that net/http's goroutine, buffers and request
// (about 10 KiB) are released instead of living as long as the socket.
func (s *Sockets) Serve(w http.ResponseWriter, r *http.Request, gql http.Handler) {
	u := s.upgrader
	u.Subprotocols = subprotocols
	ws, err := u.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader has answered the client
	}
	c, err := s.register(ws)
	if err != nil {
		return
	}
	// gqlgen needs only the upgrade header to pick its websocket transport,
	// which takes the connection from the context (see Accept).
	req := upgraded.WithContext(context.WithValue(context.Background(), upgradedKey{}, c))
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
func (s *Sockets) register(ws *websocket.Conn) (*wsConn, error) {
	c := &wsConn{ws: ws, owner: s}
	ws.SetReadLimit(MaxMessage)
	ws.SetReadDeadline(time.Now().Add(PeerTimeout))
	ws.SetPongHandler(func(string) error { return ws.SetReadDeadline(time.Now().Add(PeerTimeout)) })
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, "server shutting down"), time.Now().Add(time.Second))
		ws.Close()
		return nil, errors.New("server shutting down")
	}
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	return c, nil
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

// Shutdown closes every websocket with "going away" and stops the pinger.
// Connections first get up to a second to write what they were given since
// begun (the subscriptions' final errors, handed to them as the server
// stopped), so that clients learn why before the socket closes.
func (s *Sockets) Shutdown(begun time.Time) {
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
	deadline := begun.Add(time.Second)
	for _, c := range conns {
		for c.lastWrite.Load() < begun.UnixNano() && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	for _, c := range conns {
		c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, "server shutting down"), time.Now().Add(time.Second))
		c.Close()
	}
}

// wsConn adapts a gorilla connection to gqlgen's transport.
type wsConn struct {
	ws        *websocket.Conn
	owner     *Sockets
	wmu       sync.Mutex // one writer at a time
	once      sync.Once
	lastWrite atomic.Int64 // unix nanoseconds of the last message written
}

func (c *wsConn) NextReader() (int, io.Reader, error) {
	t, r, err := c.ws.NextReader()
	if err != nil {
		if websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway, websocket.CloseNoStatusReceived) {
			return t, nil, transport.ErrWebsocketClosed
		}
		return t, nil, err
	}
	c.ws.SetReadDeadline(time.Now().Add(PeerTimeout))
	return t, r, nil
}

func (c *wsConn) WriteJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
	err = c.ws.WriteMessage(websocket.TextMessage, b)
	c.lastWrite.Store(time.Now().UnixNano())
	return err
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
		c.owner.mu.Unlock()
		err = c.ws.Close()
	})
	return err
}
