package sandbox

import (
	"bytes"
	"encoding/binary"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// On Linux a reactor's image is also kept in a memory file. Each kept
// instance maps the file privately over the start of its linear memory: a
// page a run only reads stays the file's page, and a page it writes becomes
// the instance's own copy. Restoring the instance then compares only the
// pages that are the instance's own, which /proc/self/pagemap tells apart,
// instead of the whole memory; a new instance takes the image by mapping it,
// without copying it.

// imageFile is an image's memory file.
type imageFile struct {
	fd   int
	size int
}

// newImageFile writes memory to a new memory file, or returns nil when the
// system cannot (then instances are restored by comparing every page).
func newImageFile(memory []byte) *imageFile {
	if len(memory) == 0 || len(memory)%pageBytes != 0 || openPagemap() == nil {
		return nil
	}
	fd, err := unix.MemfdCreate("pluginhost-image", unix.MFD_CLOEXEC)
	if err != nil {
		return nil
	}
	for off := 0; off < len(memory); {
		n, err := unix.Pwrite(fd, memory[off:], int64(off))
		if err != nil || n == 0 {
			unix.Close(fd)
			return nil
		}
		off += n
	}
	return &imageFile{fd: fd, size: len(memory)}
}

// close closes the file; the instances that map it keep their mappings.
func (f *imageFile) close() { unix.Close(f.fd) }

// mapOnto maps the file privately over mem, which must start at a page and
// be the file's size, and reports whether it did. Afterwards mem holds the
// image, whatever it held before.
func (f *imageFile) mapOnto(mem []byte) bool {
	if len(mem) != f.size || uintptr(unsafe.Pointer(unsafe.SliceData(mem)))%uintptr(pageBytes) != 0 {
		return false
	}
	_, err := unix.MmapPtr(f.fd, 0, unsafe.Pointer(unsafe.SliceData(mem)), uintptr(f.size),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_FIXED)
	return err == nil
}

// The bits of a /proc/self/pagemap entry that tell where a page is.
const (
	pagePresent = 1 << 63
	pageSwapped = 1 << 62
	pageFile    = 1 << 61 // the file's page (or shared memory), not the instance's copy
)

var pagemap struct {
	once sync.Once
	f    *os.File
}

// openPagemap returns /proc/self/pagemap, or nil when it cannot be read.
func openPagemap() *os.File {
	pagemap.once.Do(func() {
		f, err := os.Open("/proc/self/pagemap")
		if err != nil {
			return
		}
		var entry [8]byte
		if _, err := f.ReadAt(entry[:], int64(uintptr(unsafe.Pointer(&entry))/uintptr(pageBytes))*8); err != nil {
			f.Close()
			return
		}
		pagemap.f = f
	})
	return pagemap.f
}

// restoreOwnPages writes img over the pages of mem, which maps the file,
// that are the instance's own copies (written since the mapping, or swapped
// out), where they differ from img. It reports false when it cannot tell
// which pages those are, or when more than half of them are: mapping the
// file again costs less then. It reads the pages' entries into *entries,
// grown when short.
func (f *imageFile) restoreOwnPages(mem, img []byte, entries *[]byte) bool {
	pm := openPagemap()
	if pm == nil || len(mem) != f.size || len(img) != f.size {
		return false
	}
	pages := f.size / pageBytes
	if cap(*entries) < 8*pages {
		*entries = make([]byte, 8*pages)
	}
	e := (*entries)[:8*pages]
	first := int64(uintptr(unsafe.Pointer(unsafe.SliceData(mem))) / uintptr(pageBytes))
	if n, err := pm.ReadAt(e, first*8); err != nil || n != len(e) {
		return false
	}
	own := func(i int) bool {
		v := binary.NativeEndian.Uint64(e[8*i:])
		return v&pageSwapped != 0 || (v&pagePresent != 0 && v&pageFile == 0)
	}
	n := 0
	for i := range pages {
		if own(i) {
			n++
		}
	}
	if n > pages/2 {
		return false
	}
	for i := range pages {
		if !own(i) {
			continue
		}
		off := i * pageBytes
		page := mem[off : off+pageBytes]
		if !bytes.Equal(page, img[off:off+pageBytes]) {
			copy(page, img[off:off+pageBytes])
		}
	}
	return true
}

// RestoreMode says how kept reactor instances are restored between runs on
// this system: "written pages" (only the pages a run wrote are compared
// with the image) or "every page", with why.
func RestoreMode() (mode, why string) {
	if openPagemap() == nil {
		return "every page", "/proc/self/pagemap cannot be read"
	}
	fd, err := unix.MemfdCreate("pluginhost-probe", unix.MFD_CLOEXEC)
	if err != nil {
		return "every page", "memfd_create failed: " + err.Error()
	}
	unix.Close(fd)
	return "written pages", "memory files and /proc/self/pagemap are available"
}
