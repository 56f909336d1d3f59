//go:build !linux

package devloop

import "errors"

// watcher is Linux's only: elsewhere the folder is polled.
type watcher struct{ changed chan struct{} }

func watchFolder(string) (*watcher, error) {
	return nil, errors.New("its changes are not reported on this system")
}

func (w *watcher) err() error { return nil }

func (w *watcher) close() {}
