// Package live delivers storage changes to subscribers (app clients and
// dashboards) as they are committed.
//
// A subscription first receives the Instance's current storage revision
// (operation snapshot), then every later change in revision order; a change
// that arrives late or twice (across replicas, or after a resync) is dropped,
// never delivered out of order. A subscriber that falls behind receives the
// latest change instead of every one (see package changes), so a slow client
// neither slows others nor grows memory. Access is checked at subscribe time
// and again whenever the Instance is disabled, uninstalled or changes hands:
// a subscription that loses access ends with an error, it does not go silent.
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
	subs    map[*changes.Subscription]struct{}
	closed  bool
	wg      sync.WaitGroup
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

// Subscribe watches an Instance for the user until ctx ends. namespaces,
// when given, keeps only changes of those namespaces (a reset or migration of
// the whole Instance always passes).
func (h *Hub) Subscribe(ctx context.Context, user *models.User, instanceID string, namespaces []string) (<-chan *models.StorageChange, error) {
	conn := connFrom(ctx)
	if err := h.take(user.ID, conn); err != nil {
		return nil, err
	}
	sub := h.Bus.Subscribe(instanceID)
	caller := storage.Caller{UserID: user.ID}
	rev, err := h.Storage.Watch(ctx, caller, instanceID, namespaces)
	if err != nil {
		sub.Close()
		h.release(user.ID, conn)
		return nil, err
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		sub.Close()
		h.release(user.ID, conn)
		return nil, errShutdown
	}
	h.subs[sub] = struct{}{}
	h.wg.Add(1)
	h.mu.Unlock()

	// Unbuffered: a change is handed to the transport's writer, so that when
	// Close returns every final message has been taken for writing.
	out := make(chan *models.StorageChange)
	go func() {
		defer h.wg.Done()
		defer h.release(user.ID, conn)
		defer close(out)
		defer func() {
			h.mu.Lock()
			delete(h.subs, sub)
			h.mu.Unlock()
			sub.Close()
		}()
		send := func(c *models.StorageChange) bool {
			select {
			case out <- c:
				return true
			case <-ctx.Done():
				return false
			}
		}
		last := rev
		if !send(&models.StorageChange{InstanceID: instanceID, UserID: user.ID, StorageRevision: rev, Operation: models.OpSnapshot}) {
			return
		}
		for {
			c, ok := sub.Next(ctx)
			if !ok {
				if ctx.Err() == nil { // closed by Close: the server stops
					send(&models.StorageChange{InstanceID: instanceID, StorageRevision: last, Operation: models.OpSnapshot, End: errShutdown})
				}
				return
			}
			switch {
			case c.Operation == models.OpAccess:
				if _, err := h.Storage.Watch(ctx, caller, instanceID, namespaces); err != nil {
					e, ok := err.(*models.Error)
					if !ok {
						e = models.Errorf(models.ErrInternal, "access could not be checked")
					}
					send(&models.StorageChange{InstanceID: instanceID, StorageRevision: last, Operation: models.OpSnapshot, End: e})
					return
				}
				continue
			case c.StorageRevision <= last:
				continue // late or repeated: the subscriber already has a newer revision
			}
			last = c.StorageRevision
			if c.Operation != models.OpSnapshot && c.Namespace != "" && len(namespaces) > 0 && !slices.Contains(namespaces, c.Namespace) {
				continue
			}
			if !send(&c) {
				return
			}
		}
	}()
	return out, nil
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
		h.subs = map[*changes.Subscription]struct{}{}
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

// Open returns how many subscriptions are open.
func (h *Hub) Open() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// Close ends every subscription with a shutdown error and waits for them
// until ctx ends.
func (h *Hub) Close(ctx context.Context) {
	h.mu.Lock()
	h.closed = true
	subs := make([]*changes.Subscription, 0, len(h.subs))
	for s := range h.subs {
		subs = append(subs, s)
	}
	h.mu.Unlock()
	for _, s := range subs {
		s.Close()
	}
	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
