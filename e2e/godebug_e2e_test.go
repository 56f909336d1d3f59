package e2e

import (
	"net/http"
	"testing"
)

// TestServeWithGODEBUG: serve listens with GODEBUG already set in its
// environment. (It runs itself once more with adaptivestackstart added to
// GODEBUG; it used to add a second GODEBUG, read the first, and run itself
// again forever.)
func TestServeWithGODEBUG(t *testing.T) {
	t.Setenv("GODEBUG", "madvdontneed=1")
	p := NewPublisher(t)
	s := Start(t, "sqlite:"+t.TempDir()+"/godebug.db", p.Dir)
	resp, err := http.Get(s.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz answered %d", resp.StatusCode)
	}
}
