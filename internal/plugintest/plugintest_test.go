package plugintest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// A build removes the build folders of the test binaries that have ended,
// and only those: its own, those of running processes and other folders
// stay.
func TestRemoveEnded(t *testing.T) {
	done := exec.Command(os.Args[0], "-test.run", "^$")
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	names := map[string]bool{ // name -> kept
		buildPrefix + strconv.Itoa(os.Getpid()) + "-1":              true,
		buildPrefix + strconv.Itoa(os.Getppid()) + "-2":             true,
		buildPrefix + strconv.Itoa(done.Process.Pid) + "-3":         false,
		buildPrefix + strconv.Itoa(done.Process.Pid):                false, // named before the process id was in the name
		"pluginhost-other-" + strconv.Itoa(done.Process.Pid) + "-4": true,
	}
	for name := range names {
		if err := os.MkdirAll(filepath.Join(dir, name, "notes"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	removeEnded(dir)
	for name, kept := range names {
		_, err := os.Stat(filepath.Join(dir, name))
		if got := err == nil; got != kept {
			t.Errorf("%s: kept %v, want %v", name, got, kept)
		}
	}
}
