package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// health is `pluginhost health`: the container health check. An image built
// FROM scratch has no curl or wget, so the binary asks the server itself.
func health() Command {
	return Command{
		Name:    "health",
		Summary: "ask the server on this machine whether it is ready (GET /readyz); exit 0 if so, 1 if not",
		Detail: "It reads the listen address from the same flag and environment variable as serve,\n" +
			"asking 127.0.0.1 when the server listens on every interface (0.0.0.0, [::] or :PORT).\n" +
			"Used by the Dockerfile's HEALTHCHECK (see docs/deploy.md).",
		Setup: func(fs *FlagSet) Runner {
			addr := fs.String("addr", "PLUGINHOST_ADDR", "127.0.0.1:8080", "the server's listen address")
			check := fs.Enum("check", "PLUGINHOST_HEALTH_CHECK", "ready",
				"ready: GET /readyz (the database answers); live: GET /healthz (the process answers)", "ready", "live")
			timeout := fs.Duration("timeout", "PLUGINHOST_HEALTH_TIMEOUT", 5*time.Second, 100*time.Millisecond, time.Minute,
				"how long to wait for the answer")
			return func(ctx context.Context, out IO, args []string) error {
				host, port, err := net.SplitHostPort(*addr)
				if err != nil {
					return Usagef("--addr %q: %v", *addr, err)
				}
				if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
					host = "127.0.0.1"
				}
				path := "/readyz"
				if *check == "live" {
					path = "/healthz"
				}
				url := "http://" + net.JoinHostPort(host, port) + path
				ctx, cancel := context.WithTimeout(ctx, *timeout)
				defer cancel()
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
				if err != nil {
					return err
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					fmt.Fprintf(out.Stderr, "not %s: GET %s: %v\n", *check, url, err)
					return Exit(1)
				}
				body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					fmt.Fprintf(out.Stderr, "not %s: GET %s: %s %s\n", *check, url, resp.Status, body)
					return Exit(1)
				}
				fmt.Fprintf(out.Stdout, "%s: GET %s: %s\n", *check, url, resp.Status)
				return nil
			}
		},
	}
}
