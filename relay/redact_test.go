package relay

import (
	"log/slog"
	"strings"
	"testing"

	"pluginhost/changes"
)

// TestRedact: a Redis URL is never shown with its password, in a log line or
// in the error of a URL that cannot be parsed or a server that does not answer.
func TestRedact(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"},
		{"redis://:s3cret-pw@127.0.0.1:6379/0", "redis://:xxxxx@127.0.0.1:6379/0"},
		{"redis://user:s3cret-pw@host:6379/0", "redis://user:xxxxx@host:6379/0"},
		{"rediss://user:s3cret-pw@host:6379/0?password=s3cret-pw", "rediss://user:xxxxx@host:6379/0?password=xxxxx"},
		{"redis://user:s3cret-pw@host:bad port/0", "redis://user:xxxxx@host:bad port/0"},
	} {
		if got := Redact(tc.url); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.url, got, tc.want)
		}
	}
	for _, url := range []string{
		"redis://user:s3cret-pw@host:notaport/0", // cannot be parsed
		"redis://user:s3cret-pw@127.0.0.1:1/0",   // nothing listens
		"redis://:s3cret-pw@127.0.0.1:1/0?password=s3cret-pw",
	} {
		_, err := Start(url, changes.NewBus(), nil, slog.New(slog.DiscardHandler))
		if err == nil {
			t.Fatalf("%s: started", url)
		}
		if strings.Contains(err.Error(), "s3cret-pw") {
			t.Errorf("the error shows the password: %v", err)
		}
	}
}
