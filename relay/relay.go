// Package relay carries committed storage changes between replicas through
// Redis pub/sub, so that a subscriber on one server sees a change committed on
// another.
//
// Pub/sub drops messages while a connection is down, so nothing relies on it
// alone: whenever this replica's subscription to Redis is (re)established, it
// re-reads from the database the storage revision of every Instance it has
// watchers for and delivers it as a snapshot (and asks watchers to check their
// access again); and when publishing fails, the Instances concerned are
// republished as snapshots once Redis answers again. No client keeps a stale
// revision.
package relay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	neturl "net/url"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"pluginhost/changes"
	"pluginhost/models"
	"pluginhost/redact"
)

// Channel is the Redis channel the replicas share.
const Channel = "pluginhost:storage-changes"

// outbox bounds the changes waiting to be published.
const outbox = 8192

// Revisions reads current storage revisions (the storage service).
type Revisions interface {
	Revision(ctx context.Context, instanceID string) (int64, bool, error)
}

// Relay connects a replica's bus to the other replicas.
type Relay struct {
	client    *redis.Client
	bus       *changes.Bus
	revisions Revisions
	log       *slog.Logger
	origin    string

	out   chan models.StorageChange
	mu    sync.Mutex
	dirty map[string]bool // Instances whose changes did not reach Redis

	stop chan struct{}
	wg   sync.WaitGroup
}

type message struct {
	Origin string               `json:"origin"`
	Change models.StorageChange `json:"change"`
}

// Start connects to the Redis at url (redis://HOST:PORT/N), forwards the bus's
// changes there and delivers other replicas' changes to the bus.
func Start(url string, bus *changes.Bus, revisions Revisions, log *slog.Logger) (*Relay, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("relay: --redis %s: %s", Redact(url), scrub(err.Error(), url))
	}
	opt.MaxRetries = 2
	opt.DialTimeout = 5 * time.Second
	b := make([]byte, 8)
	rand.Read(b)
	r := &Relay{
		client: redis.NewClient(opt), bus: bus, revisions: revisions, log: log, origin: hex.EncodeToString(b),
		out: make(chan models.StorageChange, outbox), dirty: map[string]bool{}, stop: make(chan struct{}),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.client.Ping(ctx).Err(); err != nil {
		r.client.Close()
		return nil, fmt.Errorf("relay: Redis at %s does not answer: %s", opt.Addr, scrub(err.Error(), url))
	}
	bus.Forward = r.forward
	r.wg.Add(2)
	go r.publishLoop()
	go r.receiveLoop()
	return r, nil
}

// Redact returns a Redis URL for messages and logs: its password (and any
// password= query parameter) replaced by "xxxxx".
func Redact(rawURL string) string {
	if u, err := neturl.Parse(rawURL); err == nil {
		if q := u.Query(); q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.Redacted()
	}
	// Not a URL. In Redis's userinfo a part without a colon is a password.
	return redact.Userinfo(rawURL, "xxxxx", true)
}

// scrub removes a URL's secrets from a message that may quote it.
func scrub(msg, rawURL string) string {
	msg = strings.ReplaceAll(msg, rawURL, Redact(rawURL))
	if u, err := neturl.Parse(rawURL); err == nil {
		if p, ok := u.User.Password(); ok && p != "" {
			msg = strings.ReplaceAll(msg, p, "xxxxx")
		}
		if p := u.Query().Get("password"); p != "" {
			msg = strings.ReplaceAll(msg, p, "xxxxx")
		}
	} else if at := strings.LastIndex(rawURL, "@"); at >= 0 {
		userinfo := rawURL[:at]
		if i := strings.Index(userinfo, "://"); i >= 0 {
			userinfo = userinfo[i+3:]
		}
		if i := strings.Index(userinfo, ":"); i >= 0 && i+1 < len(userinfo) {
			msg = strings.ReplaceAll(msg, userinfo[i+1:], "xxxxx")
		}
	}
	return msg
}

// forward queues a change for the other replicas; it never blocks.
func (r *Relay) forward(c models.StorageChange) {
	select {
	case r.out <- c:
	default:
		r.markDirty(c.InstanceID)
		r.log.Warn("relay: outbox full; the Instance will be resynchronised", "instance", c.InstanceID)
	}
}

func (r *Relay) markDirty(id string) {
	r.mu.Lock()
	r.dirty[id] = true
	r.mu.Unlock()
}

func (r *Relay) publishLoop() {
	defer r.wg.Done()
	retry := time.NewTicker(time.Second)
	defer retry.Stop()
	for {
		select {
		case <-r.stop:
			return
		case c := <-r.out:
			r.publish(c)
		case <-retry.C:
			r.republishDirty()
		}
	}
}

func (r *Relay) publish(c models.StorageChange) bool {
	b, _ := json.Marshal(message{Origin: r.origin, Change: c})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := r.client.Publish(ctx, Channel, b).Err(); err != nil {
		r.markDirty(c.InstanceID)
		r.log.Warn("relay: publish failed; the Instance will be resynchronised", "instance", c.InstanceID, "err", err)
		return false
	}
	return true
}

// republishDirty publishes the current revision of Instances whose changes
// did not reach Redis, as snapshots, once it answers again.
func (r *Relay) republishDirty() {
	r.mu.Lock()
	ids := make([]string, 0, len(r.dirty))
	for id := range r.dirty {
		ids = append(ids, id)
	}
	r.dirty = map[string]bool{}
	r.mu.Unlock()
	for _, id := range ids {
		rev, ok, err := r.revisions.Revision(context.Background(), id)
		if err != nil {
			r.markDirty(id)
			continue
		}
		if !ok {
			continue
		}
		if !r.publish(models.StorageChange{InstanceID: id, StorageRevision: rev, Operation: models.OpSnapshot}) {
			return // still down; the rest stay dirty
		}
		r.publish(models.StorageChange{InstanceID: id, Operation: models.OpAccess})
	}
}

func (r *Relay) receiveLoop() {
	defer r.wg.Done()
	ps := r.client.Subscribe(context.Background(), Channel)
	defer ps.Close()
	first := true
	for {
		select {
		case <-r.stop:
			return
		default:
		}
		msg, err := ps.ReceiveTimeout(context.Background(), time.Second)
		if err != nil {
			continue // a timeout to look at stop, or a broken connection go-redis restores
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind != "subscribe" {
				continue
			}
			if !first {
				r.resync()
			}
			first = false
		case *redis.Message:
			var in message
			if err := json.Unmarshal([]byte(m.Payload), &in); err != nil || in.Origin == r.origin {
				continue
			}
			r.bus.Deliver(in.Change)
		}
	}
}

// resync delivers the current revision of every locally watched Instance after
// the subscription to Redis was re-established.
func (r *Relay) resync() {
	ids := r.bus.Instances()
	r.log.Info("relay: reconnected to Redis; resynchronising watched Instances", "instances", len(ids))
	for _, id := range ids {
		rev, ok, err := r.revisions.Revision(context.Background(), id)
		if err != nil {
			r.log.Error("relay: resync read failed", "instance", id, "err", err)
			continue
		}
		if ok {
			r.bus.Deliver(models.StorageChange{InstanceID: id, StorageRevision: rev, Operation: models.OpSnapshot})
		}
		r.bus.Deliver(models.StorageChange{InstanceID: id, Operation: models.OpAccess})
	}
}

// Close stops relaying.
func (r *Relay) Close() error {
	close(r.stop)
	r.wg.Wait()
	return r.client.Close()
}
