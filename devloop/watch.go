package devloop

import (
	"context"
	"time"
)

// wait waits for a change of the folder, then for the folder to stay still
// for settle: no change for that long, for an editor's save is often
// several writes. A timeout above zero ends the wait for a change sooner.
// It returns false when ctx ends.
func (w *watcher) wait(ctx context.Context, settle, timeout time.Duration) bool {
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		case <-w.changed:
		}
	} else {
		select {
		case <-ctx.Done():
			return false
		case <-w.changed:
		}
	}
	still := time.NewTimer(settle)
	defer still.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-w.changed:
			still.Reset(settle)
		case <-still.C:
			return true
		}
	}
}
