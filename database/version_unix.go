//go:build unix

package database

import "syscall"

// openWALIndex returns the reader of the index of the database at path,
// opened once its first connection has made the index.
func openWALIndex(path string) *walIndex {
	w := &walIndex{path: path + "-shm", fd: -1}
	w.reopen()
	return w
}

// version reads the header: one read and one stat of the index file. An
// index file that was removed (the last connection to the database closed
// and another made it anew) is opened again, and tells nothing this time.
func (w *walIndex) version() (v Version, ok bool) {
	w.mu.RLock()
	fd := w.fd
	if fd < 0 {
		w.mu.RUnlock()
		w.reopen()
		return v, false
	}
	var b [2 * walHeaderSize]byte
	n, err := syscall.Pread(fd, b[:], 0)
	var st syscall.Stat_t
	stale := syscall.Fstat(fd, &st) != nil || st.Nlink == 0
	w.mu.RUnlock()
	if stale {
		w.reopen()
		return v, false
	}
	if err != nil || n != len(b) {
		return v, false
	}
	return headerOf(b[:])
}

// reopen opens the index file anew, if it is there and the database is
// not closed.
func (w *walIndex) reopen() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd >= 0 {
		syscall.Close(w.fd)
		w.fd = -1
	}
	if w.closed {
		return
	}
	if fd, err := syscall.Open(w.path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0); err == nil {
		w.fd = fd
	}
}

// close closes the index file for good.
func (w *walIndex) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.reopen() // closes it, and opens nothing
}
