//go:build !linux

package sandbox

import "os/exec"

// childAttributes has nothing to set on this system.
func childAttributes(*exec.Cmd) {}

// lowerPriority has nothing to set on this system.
func lowerPriority() {}

// residentBytes is not known on this system: the compiler's own watch of its
// memory bounds it.
func residentBytes(int) (int64, bool) { return 0, false }
