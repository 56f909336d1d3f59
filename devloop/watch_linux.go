package devloop

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// watchMask is what inotify reports of each watched folder: its entries
// written, made, removed, renamed or changed in their attributes, and the
// folder itself removed or renamed.
const watchMask = unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_ATTRIB | unix.IN_CREATE | unix.IN_DELETE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// watcher reports the changes of a folder and of every folder under it
// but dot folders, which the fingerprint leaves out too, as Linux's
// inotify tells them: a folder made later is watched from then on.
type watcher struct {
	file    *os.File
	fd      int
	changed chan struct{} // holds a signal while a change is not waited for yet

	mu      sync.Mutex
	root    int32            // the watch of the folder itself
	folders map[int32]string // the folder of each watch
	lost    error            // why the folder can no longer be watched
}

// watchFolder starts watching dir and the folders under it.
func watchFolder(dir string) (*watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	w := &watcher{file: os.NewFile(uintptr(fd), "inotify"), fd: fd, changed: make(chan struct{}, 1), folders: map[int32]string{}}
	w.root = -1
	if err := w.add(dir); err != nil {
		w.file.Close()
		return nil, err
	}
	w.root = w.watchOf(dir)
	go w.read()
	return w, nil
}

// add watches the folder dir and the folders under it but dot folders.
func (w *watcher) add(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p != dir && errors.Is(err, fs.ErrNotExist) {
				return nil // gone meanwhile
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		wd, err := unix.InotifyAddWatch(w.fd, p, watchMask)
		if errors.Is(err, unix.ENOENT) && p != dir {
			return filepath.SkipDir
		}
		if errors.Is(err, unix.ENOSPC) {
			return fmt.Errorf("inotify: the system's limit of watches is reached (fs.inotify.max_user_watches): %w", err)
		}
		if err != nil {
			return fmt.Errorf("inotify: watch %s: %w", p, err)
		}
		w.mu.Lock()
		w.folders[int32(wd)] = p
		w.mu.Unlock()
		return nil
	})
}

// watchOf returns the watch of the folder p, or -1.
func (w *watcher) watchOf(p string) int32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	for wd, f := range w.folders {
		if f == p {
			return wd
		}
	}
	return -1
}

// read reads the events until the watcher is closed: every event but those
// of dot files is a change; a folder made or moved in is watched; the
// folder itself removed or moved away loses the watch.
func (w *watcher) read() {
	buf := make([]byte, 64<<10)
	for {
		n, err := w.file.Read(buf)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				w.lose(fmt.Errorf("inotify: %w", err))
			}
			return
		}
		for b := buf[:n]; len(b) >= unix.SizeofInotifyEvent; {
			wd := int32(binary.NativeEndian.Uint32(b[0:]))
			mask := binary.NativeEndian.Uint32(b[4:])
			size := unix.SizeofInotifyEvent + int(binary.NativeEndian.Uint32(b[12:]))
			if size > len(b) {
				break
			}
			name := string(bytes.TrimRight(b[unix.SizeofInotifyEvent:size], "\x00"))
			b = b[size:]
			w.mu.Lock()
			folder, known := w.folders[wd]
			if mask&unix.IN_IGNORED != 0 {
				delete(w.folders, wd)
			}
			w.mu.Unlock()
			switch {
			case mask&unix.IN_Q_OVERFLOW != 0:
				// Events were dropped: the fingerprint says what changed.
			case wd == w.root && mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_IGNORED) != 0:
				w.lose(errors.New("the folder was removed or moved"))
			case strings.HasPrefix(name, "."):
				continue
			case known && mask&unix.IN_ISDIR != 0 && mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
				// A folder removed as soon as made has nothing to watch.
				if err := w.add(filepath.Join(folder, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
					w.lose(err)
				}
			}
			select {
			case w.changed <- struct{}{}:
			default:
			}
		}
	}
}

// lose records why the folder can no longer be watched, once.
func (w *watcher) lose(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lost == nil {
		w.lost = err
	}
}

// err says why the folder can no longer be watched, or nil.
func (w *watcher) err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lost
}

// close stops watching.
func (w *watcher) close() { w.file.Close() }
