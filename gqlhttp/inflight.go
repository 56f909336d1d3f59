package gqlhttp

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
	"golang.org/x/time/rate"
)

// Limiter holds the bounds of Limits and the state that enforces the
// in-flight ones: GraphQL HTTP requests at once, per user and over the
// server, and the request bodies held in memory. One user's requests wait
// for that user's own slots first, so a user who floods the server queues
// behind itself, not in front of everyone else.
type Limiter struct {
	Limits Limits

	g gate
}

// NewLimiter returns a Limiter of l, zero fields taking their defaults.
func NewLimiter(l Limits) *Limiter {
	l = l.withDefaults()
	if l.MaxInFlightBodyBytes < l.MaxBodyBytes {
		l.MaxInFlightBodyBytes = l.MaxBodyBytes
	}
	return &Limiter{Limits: l, g: gate{
		limits:   &l,
		requests: make(chan struct{}, l.MaxInFlight),
		bytes:    semaphore.NewWeighted(l.MaxInFlightBodyBytes),
		users:    map[string]*userSlots{},
		rates:    map[string]*rate.Limiter{},
	}}
}

// gate admits requests within the in-flight bounds.
type gate struct {
	limits   *Limits
	requests chan struct{}
	bytes    *semaphore.Weighted

	mu    sync.Mutex
	users map[string]*userSlots

	rates map[string]*rate.Limiter // work per user (UserWorkPerSecond)
	// The two users who spent work last, and when: whether anyone else is
	// at work (see spend).
	last, before     string
	lastAt, beforeAt time.Time

	admitted atomic.Int64 // requests holding a slot
	reserved atomic.Int64 // body bytes reserved
}

// InFlight returns how many GraphQL HTTP requests hold a slot, and how many
// body bytes are reserved, at this moment.
func (l *Limiter) InFlight() (requests int, bodyBytes int64) {
	return int(l.g.admitted.Load()), l.g.reserved.Load()
}

type userSlots struct {
	slots chan struct{}
	refs  int // requests holding or waiting for a slot
}

// errCancelled answers a request whose context ended while it waited for
// admission.
func errCancelled() *requestError {
	return &requestError{http.StatusServiceUnavailable, "CANCELLED", "the request was cancelled"}
}

// admit waits up to InFlightWait for a slot of the user and one of the
// server; release returns both.
func (g *gate) admit(ctx context.Context, user string) (release func(), err *requestError) {
	g.mu.Lock()
	u := g.users[user]
	if u == nil {
		u = &userSlots{slots: make(chan struct{}, g.limits.MaxInFlightPerUser)}
		g.users[user] = u
	}
	u.refs++
	g.mu.Unlock()
	drop := func() {
		g.mu.Lock()
		if u.refs--; u.refs == 0 {
			delete(g.users, user)
		}
		g.mu.Unlock()
	}
	// A free slot is taken at once, without a timer. A slot is free only
	// while no one waits for it (a release hands it to the first waiter),
	// so this takes no one's turn.
	var timer *time.Timer
	expired := func() <-chan time.Time {
		if timer == nil {
			timer = time.NewTimer(g.limits.InFlightWait)
		}
		return timer.C
	}
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	select {
	case u.slots <- struct{}{}:
	default:
		select {
		case u.slots <- struct{}{}:
		case <-expired():
			drop()
			return nil, &requestError{http.StatusTooManyRequests, "TOO_MANY_REQUESTS",
				fmt.Sprintf("this user has %d GraphQL requests in progress; wait for one to finish", g.limits.MaxInFlightPerUser)}
		case <-ctx.Done():
			drop()
			return nil, errCancelled()
		}
	}
	select {
	case g.requests <- struct{}{}:
	default:
		select {
		case g.requests <- struct{}{}:
		case <-expired():
			<-u.slots
			drop()
			return nil, &requestError{http.StatusServiceUnavailable, "SERVER_BUSY", "the server is busy; try again shortly"}
		case <-ctx.Done():
			<-u.slots
			drop()
			return nil, errCancelled()
		}
	}
	g.admitted.Add(1)
	return func() {
		g.admitted.Add(-1)
		<-g.requests
		<-u.slots
		drop()
	}, nil
}

// workBurst is how much work a user may spend at once.
func (g *gate) workBurst() int {
	return 2*g.limits.MaxQueryCost + int(g.limits.MaxBodyBytes>>10) + RequestWork
}

// spend charges units of work to the user, waiting up to InFlightWait for
// them when the user has spent its rate. The rate holds a user back only for
// the others' sake: the work of a user who is alone at work (no other user
// spent any in the last WorkPeers) is not charged, so a single client in a
// loop runs at the server's speed, and meets others with its burst whole.
func (g *gate) spend(ctx context.Context, user string, units int) *requestError {
	if units <= 0 {
		return nil
	}
	now := time.Now()
	g.mu.Lock()
	l := g.rates[user]
	if l == nil {
		if len(g.rates) >= 10000 { // forget users who are back to a full burst
			for u, r := range g.rates {
				if r.Tokens() >= float64(r.Burst()) {
					delete(g.rates, u)
				}
			}
		}
		l = rate.NewLimiter(rate.Limit(g.limits.UserWorkPerSecond), g.workBurst())
		g.rates[user] = l
	}
	other, otherAt := g.last, g.lastAt
	if other == user {
		other, otherAt = g.before, g.beforeAt
	} else {
		g.before, g.beforeAt = g.last, g.lastAt
	}
	g.last, g.lastAt = user, now
	alone := other == "" || now.Sub(otherAt) > WorkPeers
	g.mu.Unlock()
	if alone {
		return nil
	}
	units = min(units, l.Burst())
	r := l.ReserveN(time.Now(), units)
	if !r.OK() {
		return g.tooMuchWork()
	}
	d := r.Delay()
	if d == 0 {
		return nil
	}
	if d > g.limits.InFlightWait {
		r.Cancel()
		return g.tooMuchWork()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		r.Cancel()
		return errCancelled()
	}
}

// tooMuchWork answers a user who spent its work rate (UserWorkPerSecond).
func (g *gate) tooMuchWork() *requestError {
	return &requestError{http.StatusTooManyRequests, "TOO_MANY_REQUESTS",
		fmt.Sprintf("this user asked for more work than %d units a second; slow down", g.limits.UserWorkPerSecond)}
}

// reserveBytes waits up to InFlightWait for n bytes of the in-flight body
// budget.
func (g *gate) reserveBytes(ctx context.Context, n int64) (func(), *requestError) {
	if n <= 0 {
		return func() {}, nil
	}
	// Free bytes and no one waiting (the common case) need no wait, and
	// so no timer.
	if !g.bytes.TryAcquire(n) {
		wctx, cancel := context.WithTimeout(ctx, g.limits.InFlightWait)
		defer cancel()
		if err := g.bytes.Acquire(wctx, n); err != nil {
			if ctx.Err() != nil {
				return nil, errCancelled()
			}
			return nil, &requestError{http.StatusServiceUnavailable, "SERVER_BUSY", "the server is reading too many request bodies; try again shortly"}
		}
	}
	g.reserved.Add(n)
	return func() {
		g.reserved.Add(-n)
		g.bytes.Release(n)
	}, nil
}

// admittedKey marks the context of an operation admitted within the
// in-flight bounds already (by its HTTP request).
type admittedKey struct{}

func withAdmission(ctx context.Context) context.Context {
	return context.WithValue(ctx, admittedKey{}, true)
}

func admitted(ctx context.Context) bool {
	_, ok := ctx.Value(admittedKey{}).(bool)
	return ok
}
