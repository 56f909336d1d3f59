package main

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"pluginhost/cli"
	"pluginhost/gqlhttp"
)

// TestDeployFiles checks the Dockerfile, compose.yaml, deploy/nginx.conf and
// docs/deploy.md against the binary: with no Docker daemon to build and run
// them, these are the mistakes that would otherwise show only at deploy time
// (a setting the server ignores, a health check command that does not
// exist, an upstream that names no service, a Go version that drifts).
func TestDeployFiles(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	dockerfile, compose, nginx, guide, gomod := read("Dockerfile"), read("compose.yaml"), read("deploy/nginx.conf"), read("docs/deploy.md"), read("go.mod")

	// Every PLUGINHOST_ setting they name is a flag's environment twin.
	known := map[string]bool{"PLUGINHOST_SECRET_KEY": true}
	commands := map[string]bool{}
	for _, c := range append([]cli.Command{serveCommand()}, cli.Commands()...) {
		commands[c.Name] = true
		fs := cli.NewFlagSet(c.Name)
		c.Setup(fs)
		for _, f := range fs.Flags() {
			known[f.Env] = true
		}
	}
	setting := regexp.MustCompile(`PLUGINHOST_[A-Z0-9_]+`)
	for name, text := range map[string]string{"Dockerfile": dockerfile, "compose.yaml": compose, "docs/deploy.md": guide} {
		for _, v := range setting.FindAllString(text, -1) {
			if !known[v] && !strings.HasPrefix(v, "PLUGINHOST_TEST_") {
				t.Errorf("%s sets %s, which no command reads", name, v)
			}
		}
	}

	// The Dockerfile: the Go of go.mod, a static build, not root, the data
	// folder on a volume, a health check the binary has.
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(gomod)
	if goVersion == nil || !strings.Contains(dockerfile, "FROM golang:"+goVersion[1]+"-") {
		t.Errorf("the Dockerfile's build stage is not golang:%v (go.mod)", goVersion)
	}
	for _, want := range []string{"CGO_ENABLED=0", "FROM scratch", `VOLUME ["/data"]`, "PLUGINHOST_DATA_DIR=/data", "PLUGINHOST_ADDR=0.0.0.0:8080", "EXPOSE 8080"} {
		if !strings.Contains(dockerfile, want) {
			t.Errorf("the Dockerfile lacks %s", want)
		}
	}
	user := regexp.MustCompile(`(?m)^USER (\S+)`).FindStringSubmatch(dockerfile)
	if user == nil || strings.HasPrefix(user[1], "0") || strings.HasPrefix(user[1], "root") {
		t.Errorf("the Dockerfile runs as %v, want a non-root user", user)
	}
	health := regexp.MustCompile(`(?m)^HEALTHCHECK .* CMD \["/usr/local/bin/pluginhost", "(\w+)"\]`).FindStringSubmatch(dockerfile)
	if health == nil || !commands[health[1]] {
		t.Errorf("the Dockerfile's HEALTHCHECK runs %v, which is not a command", health)
	}
	if cmd := regexp.MustCompile(`(?m)^CMD \["(\w+)"\]`).FindStringSubmatch(dockerfile); cmd == nil || !commands[cmd[1]] {
		t.Errorf("the Dockerfile's CMD is %v, not a command", cmd)
	}

	// compose.yaml: MariaDB with the collation the host needs, two replicas
	// sharing the secret key, Redis, and the load balancer's upstreams.
	for _, want := range []string{"--character-set-server=utf8mb4", "--collation-server=utf8mb4_nopad_bin", "PLUGINHOST_SECRET_KEY:", "PLUGINHOST_REDIS: redis://redis:6379/0", "pluginhost-1:", "pluginhost-2:", "./deploy/nginx.conf:/etc/nginx/conf.d/default.conf"} {
		if !strings.Contains(compose, want) {
			t.Errorf("compose.yaml lacks %s", want)
		}
	}
	upstreams := regexp.MustCompile(`(?m)^\s*server (\S+):8080`).FindAllStringSubmatch(nginx, -1)
	if len(upstreams) != 2 {
		t.Errorf("nginx.conf balances over %d replicas, want the 2 of compose.yaml", len(upstreams))
	}
	for _, upstream := range upstreams {
		if !strings.Contains(compose, "\n  "+upstream[1]+":\n") {
			t.Errorf("nginx.conf balances over %s, which is no service of compose.yaml", upstream[1])
		}
	}

	// nginx: websockets pass, a package fits, idle subscriptions outlive
	// the server's 20 s ping.
	for _, want := range []string{"proxy_http_version 1.1;", "proxy_set_header Upgrade $http_upgrade;", "proxy_set_header Connection $connection_upgrade;"} {
		if !strings.Contains(nginx, want) {
			t.Errorf("nginx.conf lacks %s", want)
		}
	}
	if m := regexp.MustCompile(`client_max_body_size (\d+)m;`).FindStringSubmatch(nginx); m == nil {
		t.Error("nginx.conf sets no client_max_body_size")
	} else if n, _ := strconv.Atoi(m[1]); n<<20 < gqlhttp.DefaultMaxBodyBytes {
		t.Errorf("nginx.conf accepts %d MiB bodies, less than a GraphQL request may be (%d bytes)", n, gqlhttp.DefaultMaxBodyBytes)
	}
}
