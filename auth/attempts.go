package auth

import (
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"pluginhost/metrics"
	"pluginhost/models"
)

// Default bounds of failed sign-in attempts (--signin-*): one client address
// may fail DefaultAttemptsPerAddress times in a DefaultAttemptsWindow, all
// addresses together DefaultAttemptsOverall times.
const (
	DefaultAttemptsPerAddress = 20
	DefaultAttemptsOverall    = 1000
	DefaultAttemptsWindow     = time.Minute
)

// maxAddresses bounds the addresses whose failures are counted at once;
// past it, new addresses count toward the overall bound only.
const maxAddresses = 100000

// Attempts limits failed sign-in attempts (a bearer token or JWT, HTTP
// Basic's password, the sign-in form, the identity provider's return), per
// client address and overall, in windows that begin with a failure:
//   - an address that failed PerAddress times in a Window is refused, its
//     right credentials too, until that window ends;
//   - once all addresses together failed Overall times in a Window,
//     credentials not already known to be valid are refused until it ends
//     (a known credential costs nothing to check, so those keep working).
//
// A refusal is TOO_MANY_REQUESTS with RetryAfter the rest of the window
// (429 and Retry-After over HTTP), and is counted in /metrics
// (pluginhost_signin_refusals_total, as the Authenticator counts every
// invalid credential there).
type Attempts struct {
	// PerAddress, Overall and Window are the bounds; zero fields take their
	// defaults.
	PerAddress int
	Overall    int
	Window     time.Duration
	// Now is the clock; nil is time.Now.
	Now func() time.Time

	mu    sync.Mutex
	addrs map[string]*window
	all   window
	until atomic.Int64 // when the last window under way ends (Unix ns): before it Allow needs no lock
}

// window counts failures since start.
type window struct {
	start time.Time
	n     int
}

func (a *Attempts) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a *Attempts) bounds() (perAddress, overall int, w time.Duration) {
	perAddress, overall, w = a.PerAddress, a.Overall, a.Window
	if perAddress <= 0 {
		perAddress = DefaultAttemptsPerAddress
	}
	if overall <= 0 {
		overall = DefaultAttemptsOverall
	}
	if w <= 0 {
		w = DefaultAttemptsWindow
	}
	return perAddress, overall, w
}

// Limit is what Allow found: whether the address, or every unknown
// credential, must wait.
type Limit struct {
	Address time.Duration // > 0: the address must wait this long
	Overall time.Duration // > 0: credentials not already known must wait this long
}

// Allow reports how long the client must wait before another attempt.
func (a *Attempts) Allow(client string) Limit {
	if a == nil {
		return Limit{}
	}
	now := a.now()
	if now.UnixNano() >= a.until.Load() {
		return Limit{}
	}
	perAddress, overall, win := a.bounds()
	a.mu.Lock()
	defer a.mu.Unlock()
	var l Limit
	if w := a.addrs[client]; w != nil && w.n >= perAddress && now.Sub(w.start) < win {
		l.Address = w.start.Add(win).Sub(now)
	}
	if a.all.n >= overall && now.Sub(a.all.start) < win {
		l.Overall = a.all.start.Add(win).Sub(now)
	}
	return l
}

// Fail counts a failed attempt from the client.
func (a *Attempts) Fail(client string) {
	if a == nil {
		return
	}
	_, _, win := a.bounds()
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sweep(now, win)
	if a.all.n == 0 || now.Sub(a.all.start) >= win {
		a.all = window{start: now}
	}
	a.all.n++
	if end := a.all.start.Add(win).UnixNano(); end > a.until.Load() {
		a.until.Store(end)
	}
	w := a.addrs[client]
	switch {
	case w != nil && now.Sub(w.start) >= win:
		*w = window{start: now}
	case w != nil:
	case len(a.addrs) >= maxAddresses:
		return
	default:
		if a.addrs == nil {
			a.addrs = map[string]*window{}
		}
		w = &window{start: now}
		a.addrs[client] = w
	}
	w.n++
	if end := w.start.Add(win).UnixNano(); end > a.until.Load() {
		a.until.Store(end)
	}
}

// sweep forgets the windows that ended, a few at a time.
func (a *Attempts) sweep(now time.Time, win time.Duration) {
	i := 0
	for k, w := range a.addrs {
		if now.Sub(w.start) >= win {
			delete(a.addrs, k)
		}
		if i++; i >= 64 {
			break
		}
	}
}

// refusal is the error of a client that must wait, counted in /metrics.
func refusal(wait time.Duration, scope string) error {
	metrics.SignInRefused("limited_" + scope)
	wait = max(wait, time.Second)
	who := "this address"
	if scope == "overall" {
		who = "all addresses"
	}
	return &models.Error{Code: models.ErrTooManyRequests, RetryAfter: wait,
		Message: "too many failed sign-in attempts from " + who + "; try again in " + secondsText(wait)}
}

func secondsText(d time.Duration) string {
	n := int(math.Ceil(d.Seconds()))
	if n == 1 {
		return "1 second"
	}
	return strconv.Itoa(n) + " seconds"
}

// ClientAddress returns the address a request's attempts are counted
// under: the peer's IP address, or, when the peer is one of the trusted
// proxies, the nearest address in X-Forwarded-For that is not. An IPv6
// address counts as its /64, which one client usually holds whole.
func ClientAddress(r *http.Request, trusted []netip.Prefix) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	addr = addr.Unmap()
	if isTrusted(addr, trusted) {
		hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
		for i := len(hops) - 1; i >= 0; i-- {
			hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
			if err != nil {
				break
			}
			addr = hop.Unmap()
			if !isTrusted(addr, trusted) {
				break
			}
		}
	}
	if addr.Is6() {
		p, _ := addr.Prefix(64)
		return p.String()
	}
	return addr.String()
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
