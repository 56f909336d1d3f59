//go:build unix

package sandbox

import "syscall"

// reserve maps n bytes of zeroed memory outside the Go heap. The pages cost
// nothing until they are touched, so that a run's memory can be reserved at
// its limit at once and never moves.
func reserve(n uint64) []byte {
	if n == 0 {
		return []byte{}
	}
	b, err := syscall.Mmap(-1, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return nil // the allocation fails as a growth past the limit does
	}
	return b
}

// release unmaps memory from reserve.
func release(b []byte) {
	if len(b) > 0 {
		syscall.Munmap(b)
	}
}
