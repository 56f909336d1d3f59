package sandbox

import (
	"context"
	"encoding/binary"
	"math"
	"time"

	"github.com/tetratelabs/wazero/api"
)

// MaxPollSubscriptions is the most subscriptions one call of poll_oneoff
// may make. A call with more answers EINVAL, as poll(2) does past its limit
// of descriptors: Go's runtime and wasi-libc subscribe to a clock, and to a
// stream or two at most.
const MaxPollSubscriptions = 64

// The errors of WASI preview 1 the host's own functions answer.
const (
	errnoBadf   = 8
	errnoFault  = 21
	errnoInval  = 28
	errnoNotsup = 58
)

// The layout of poll_oneoff's subscriptions and events.
const (
	subscriptionBytes = 48
	eventBytes        = 32
	eventClock        = 0
	eventFdRead       = 1
	eventFdWrite      = 2
	clockAbstime      = 1
)

// pollOneoff is the module's poll_oneoff(in, out, nsubscriptions, nevents):
// it waits for the first of its subscriptions to a clock (a relative
// timeout) or to a standard stream, and writes the events that occurred.
// The streams are always ready (standard input is in memory, the outputs
// never block), so a call with one answers at once; a call of clocks alone
// sleeps for the shortest, and stops the run when its time is up first.
// A call of no subscriptions or of more than MaxPollSubscriptions answers
// EINVAL, an absolute time ENOTSUP (as wazero's did), memory out of reach
// EFAULT; a stream other than the standard ones is an event of EBADF.
func pollOneoff(ctx context.Context, mod api.Module, stack []uint64) {
	if ctx.Err() != nil {
		stop(ctx, mod)
	}
	in, out, n, nevents := uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3])
	stack[0] = uint64(poll(ctx, mod, in, out, n, nevents))
}

func poll(ctx context.Context, mod api.Module, in, out, n, nevents uint32) uint32 {
	if n == 0 || n > MaxPollSubscriptions {
		return errnoInval
	}
	mem := mod.Memory()
	view, ok := mem.Read(in, n*subscriptionBytes)
	if !ok {
		return errnoFault
	}
	if _, ok := mem.Read(out, n*eventBytes); !ok {
		return errnoFault
	}
	var subs [MaxPollSubscriptions * subscriptionBytes]byte
	copy(subs[:], view) // the events may overlap the subscriptions
	var events [MaxPollSubscriptions * eventBytes]byte
	count := uint32(0)
	event := func(sub []byte, errno uint16) {
		e := events[count*eventBytes : (count+1)*eventBytes]
		copy(e, sub[:8]) // userdata
		binary.LittleEndian.PutUint16(e[8:], errno)
		e[10] = sub[8] // the type
		count++
	}
	wait := time.Duration(math.MaxInt64)
	for i := range n {
		sub := subs[i*subscriptionBytes : (i+1)*subscriptionBytes]
		switch sub[8] {
		case eventClock:
			switch binary.LittleEndian.Uint16(sub[40:]) {
			case 0:
			case clockAbstime:
				return errnoNotsup
			default:
				return errnoInval
			}
			wait = min(wait, clockTimeout(sub))
		case eventFdRead, eventFdWrite:
			fd := binary.LittleEndian.Uint32(sub[16:])
			if sub[8] == eventFdRead && fd == 0 || sub[8] == eventFdWrite && (fd == 1 || fd == 2) {
				event(sub, 0)
			} else {
				event(sub, errnoBadf)
			}
		default:
			return errnoInval
		}
	}
	if count == 0 {
		if wait > 0 {
			sleep(ctx, int64(wait))
		}
		if ctx.Err() != nil {
			stop(ctx, mod)
		}
	} else {
		wait = 0 // a stream is ready: only the clocks already due occur
	}
	for i := range n {
		sub := subs[i*subscriptionBytes : (i+1)*subscriptionBytes]
		if sub[8] == eventClock && clockTimeout(sub) <= wait {
			event(sub, 0)
		}
	}
	if !mem.Write(out, events[:count*eventBytes]) || !mem.WriteUint32Le(nevents, count) {
		return errnoFault
	}
	return 0
}

// clockTimeout is the relative timeout of a clock subscription.
func clockTimeout(sub []byte) time.Duration {
	return time.Duration(min(binary.LittleEndian.Uint64(sub[24:]), math.MaxInt64))
}

// sleep waits ns nanoseconds for the module; it ends early when the run's
// context does, so that a module that sleeps cannot outlive its wall time.
func sleep(ctx context.Context, ns int64) {
	if ctx == nil {
		return
	}
	t := time.NewTimer(time.Duration(ns))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
