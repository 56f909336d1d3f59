// Package live delivers storage changes to subscribers (app clients and
// dashboards) as they are committed.
//
// A subscription first receives the Instance's current storage revision
// (operation snapshot), then every later change in revision order; a change
// that arrives late or twice (across replicas, or after a resync) is dropped,
// never delivered out of order. Each subscription holds at most QueueLength
// changes for its client; when a slow client lets it fill, the oldest is
// dropped, so the client always ends on the latest revision (a jump in
// revisions tells it to read again) and neither slows others nor grows
// memory. Access is checked at subscribe time and again whenever the Instance
// is disabled, uninstalled or changes hands: a subscription that loses access
// ends with an error, it does not go silent.
//
// An idle subscription costs no goroutine of its own: publishers hand changes
// to it under a lock, and it is torn down by a callback when its context ends.
package live

import (
	"context"
	"log/slog"
	"slices"
	"sync"

	"pluginhost/changes"
	"pluginhost/models"
	"pluginhost/storage"
)

// Default limits on subscriptions.
const (
	DefaultMaxPerConnection = 64
	DefaultMaxPerUser       = 1024
)

// QueueLength is how many changes a subscription holds for a slow client.
const QueueLength = 8

// Hub serves subscriptions.
type Hub struct {
	Bus     *changes.Bus
	Storage *storage.Service
	// MaxPerConnection and MaxPerUser bound open subscriptions; zero selects
	// the defaults.
	MaxPerConnection int
	MaxPerUser       int
	Log              *slog.Logger

	mu      sync.Mutex
	perUser map[string]int
	watches map[*watch]struct{}
	closed  bool
}

// Conn counts one connection's subscriptions.
type Conn struct {
	mu sync.Mutex
	n  int
}

type connKey struct{}

// WithConn returns a context for the operations of one connection.
func WithConn(ctx context.Context, c *Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

func connFrom(ctx context.Context) *Conn {
	c, _ := ctx.Value(connKey{}).(*Conn)
	return c
}

var errShutdown = models.Errorf(models.ErrForbidden, "the server is shutting down; reconnect to another replica")

// watch is one subscription.
type watch struct {
	hub        *Hub
	user       string
	conn       *Conn
	instanceID string
	namespaces []string
	onEnd      func(*models.Error)
	out        chan *models.StorageChange
	// done is the subscription's context's: once it is closed the client is
	// gone and nobody reads why the host ended it.
	done <-chan struct{}

	mu      sync.Mutex
	stop    func() bool            // stops the context callback
	ready   bool                   // the snapshot was sent
	early   []models.StorageChange // changes that came before the snapshot
	last    int64
	gen     int64 // the Installation's package generation, as last known
	ended   bool
	dropped int
}

// Subscribe watches an Instance for the user until ctx ends. namespaces,
// when given, keeps only changes of those namespaces (a reset or migration of
// the whole Instance always passes). When the host ends the subscription
// (access lost, shutdown), onEnd is told why just before the channel closes.
func (h *Hub) Subscribe(ctx context.Context, user *models.User, instanceID string, namespaces []string, onEnd func(*models.Error)) (<-chan *models.StorageChange, error) {
	conn := connFrom(ctx)
	if err := h.take(user.ID, conn); err != nil {
		return nil, err
	}
	w := &watch{hub: h, user: user.ID, conn: conn, instanceID: instanceID, namespaces: namespaces, onEnd: onEnd,
		out: make(chan *models.StorageChange, QueueLength), done: ctx.Done()}
	h.Bus.Watch(instanceID, w)
	rev, gen, err := h.check(ctx, user.ID, instanceID, namespaces)
	if err == nil {
		h.mu.Lock()
		if h.closed {
			err = errShutdown
		} else {
			h.watches[w] = struct{}{}
		}
		h.mu.Unlock()
	}
	if err != nil {
		h.Bus.Unwatch(instanceID, w)
		h.release(user.ID, conn)
		return nil, err
	}
	w.mu.Lock()
	w.last = rev
	w.gen = gen
	w.ready = true
	w.send(&models.StorageChange{InstanceID: instanceID, UserID: user.ID, StorageRevision: rev, Operation: models.OpSnapshot, Generation: gen})
	early := w.early
	w.early = nil
	for _, c := range early {
		w.accept(c)
	}
	// Registered under the lock: Close may end the watch at any moment now.
	w.stop = context.AfterFunc(ctx, func() { w.end(nil) })
	w.mu.Unlock()
	return w.out, nil
}

// Deliver takes a change from the bus; it never blocks.
func (w *watch) Deliver(c models.StorageChange) {
	if c.Operation == models.OpAccess {
		go w.recheck() // rare: whether the Instance may still be watched
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return
	}
	if !w.ready {
		w.early = append(w.early, c)
		return
	}
	w.accept(c)
}

// accept delivers a change in revision order, filtered. w.mu is held.
func (w *watch) accept(c models.StorageChange) {
	if c.Operation == models.OpDevelopment {
		// A notice about no change: it carries the revision the client has.
		c.StorageRevision, c.Generation = w.last, w.gen
		w.send(&c)
		return
	}
	if c.StorageRevision <= w.last {
		return // late or repeated: the client already has a newer revision
	}
	w.last = c.StorageRevision
	// A publisher that did not know the generation (a resynchronisation
	// between replicas) left it 0: the watch knows the latest one.
	if c.Generation > w.gen {
		w.gen = c.Generation
	}
	c.Generation = w.gen
	if c.Operation != models.OpSnapshot && c.Namespace != "" && len(w.namespaces) > 0 && !slices.Contains(w.namespaces, c.Namespace) {
		return
	}
	w.send(&c)
}

// send queues a change for the client, dropping the oldest when the queue is
// full. w.mu is held.
func (w *watch) send(c *models.StorageChange) {
	for {
		select {
		case w.out <- c:
			return
		default:
		}
		select {
		case <-w.out:
			w.dropped++
		default:
		}
	}
}

// check asks the storage service whether the user may watch the Instance, on
// a goroutine of its own: the database call runs deep, and the calling
// goroutine, which then waits for the subscription's whole life, would keep
// the stack it grew to (several KiB per idle subscriber).
func (h *Hub) check(ctx context.Context, userID, instanceID string, namespaces []string) (rev, gen int64, err error) {
	type result struct {
		rev, gen int64
		err      error
	}
	done := make(chan result, 1)
	go func() {
		rev, gen, err := h.Storage.WatchAt(ctx, models.Caller{UserID: userID}, instanceID, namespaces)
		done <- result{rev, gen, err}
	}()
	r := <-done
	return r.rev, r.gen, r.err
}

// recheck ends the subscription if its user may no longer watch the Instance.
func (w *watch) recheck() {
	_, err := w.hub.Storage.Watch(context.Background(), models.Caller{UserID: w.user}, w.instanceID, w.namespaces)
	if err == nil {
		return
	}
	e, ok := err.(*models.Error)
	if !ok {
		e = models.Errorf(models.ErrInternal, "access could not be checked")
	}
	w.end(e)
}

// end ends the subscription, with why when the host ends it.
func (w *watch) end(why *models.Error) {
	w.mu.Lock()
	if w.ended {
		w.mu.Unlock()
		return
	}
	w.ended = true
	if why != nil && w.onEnd != nil && !closed(w.done) {
		w.onEnd(why)
	}
	close(w.out)
	stop := w.stop
	w.mu.Unlock()
	if stop != nil {
		stop()
	}
	h := w.hub
	h.Bus.Unwatch(w.instanceID, w)
	h.mu.Lock()
	delete(h.watches, w)
	h.mu.Unlock()
	h.release(w.user, w.conn)
}

func (h *Hub) take(userID string, conn *Conn) error {
	maxConn, maxUser := h.MaxPerConnection, h.MaxPerUser
	if maxConn == 0 {
		maxConn = DefaultMaxPerConnection
	}
	if maxUser == 0 {
		maxUser = DefaultMaxPerUser
	}
	if conn != nil {
		conn.mu.Lock()
		if conn.n >= maxConn {
			conn.mu.Unlock()
			return models.Errorf(models.ErrForbidden, "this connection already has %d subscriptions; at most %d are allowed per connection", maxConn, maxConn)
		}
		conn.n++
		conn.mu.Unlock()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.perUser == nil {
		h.perUser = map[string]int{}
		h.watches = map[*watch]struct{}{}
	}
	if h.perUser[userID] >= maxUser {
		if conn != nil {
			conn.mu.Lock()
			conn.n--
			conn.mu.Unlock()
		}
		return models.Errorf(models.ErrForbidden, "you already have %d subscriptions; at most %d are allowed per user", maxUser, maxUser)
	}
	h.perUser[userID]++
	return nil
}

func (h *Hub) release(userID string, conn *Conn) {
	if conn != nil {
		conn.mu.Lock()
		conn.n--
		conn.mu.Unlock()
	}
	h.mu.Lock()
	if h.perUser[userID]--; h.perUser[userID] <= 0 {
		delete(h.perUser, userID)
	}
	h.mu.Unlock()
}

// Hold counts a subscription that is not an Instance's (the viewer's
// notifications) toward the connection's and the user's bounds, until
// release is called.
func (h *Hub) Hold(ctx context.Context, userID string) (release func(), err error) {
	conn := connFrom(ctx)
	if err := h.take(userID, conn); err != nil {
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { h.release(userID, conn) }) }, nil
}

// Open returns how many subscriptions are open.
func (h *Hub) Open() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.watches)
}

// closed reports whether done is closed.
func closed(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// Close ends every subscription. It gives no error: the server closes the
// websockets first, with the protocol's going-away close, and a subscription
// whose transport is ending must not be told anything more (its protocol
// goroutine may be reading its errors at that moment).
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	ws := make([]*watch, 0, len(h.watches))
	for w := range h.watches {
		ws = append(ws, w)
	}
	h.mu.Unlock()
	for _, w := range ws {
		w.end(nil)
	}
}
