package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"

	"pluginhost/internal/testenv"
)

// TestAppClients runs Apollo Client and urql from npm, each with its
// default normalised cache and graphql-ws, as a new app developer would,
// against a server with two plugins that share every id a plugin gives
// (e2e/appclients/journey.mjs): the installations query, aiTools, uiConfig,
// node, a storage subscription, a notification and its actions, and paging
// with relayStylePagination and relayPagination while notifications
// arrive. Every check is that each plugin shows its own data.
func TestAppClients(t *testing.T) {
	node := nodeWith(t, "appclients", "@apollo/client")
	b := testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"}
	th := newTwinHost(t, newHost(t, b))
	setup := map[string]any{"url": th.URL, "token": th.Alice.Token}
	var list []map[string]any
	for _, w := range twins {
		// Notifications to page through: three of each plugin.
		th.Notify(t, w, "seed-1", "seed-2", "seed-3")
		list = append(list, map[string]any{"key": w.Key, "title": w.Title, "pluginId": w.PluginID,
			"installation": th.Installation[w.Key], "instance": th.Instance[w.Key], "access": w.Access, "connected": w.Connected,
			"description": w.Description(), "capabilityDescription": w.CapabilityDescription(), "undoLabel": w.UndoLabel(), "openLabel": w.OpenLabel()})
	}
	setup["twins"] = list
	arg, _ := json.Marshal(setup)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "journey.mjs", string(arg))
	cmd.Dir = "appclients"
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	passed := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var r struct {
			Client, Check, Detail string
			OK                    bool
		}
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue
		}
		if !r.OK {
			t.Errorf("%s, %s: %s", r.Client, r.Check, r.Detail)
			continue
		}
		passed[r.Client+" "+r.Check] = true
		if r.Detail != "" {
			t.Logf("%s, %s: %s", r.Client, r.Check, r.Detail)
		}
	}
	for _, client := range []string{"apollo", "urql"} {
		for _, check := range []string{"installations", "aiTools namespaces", "uiConfig", "node", "storage subscription", "notification and its action", "paging"} {
			if !passed[client+" "+check] && !t.Failed() {
				t.Errorf("%s did not pass %q", client, check)
			}
		}
	}
	if err != nil || t.Failed() {
		t.Fatalf("node journey.mjs: %v\n%s\n%s", err, out, stderr.String())
	}
}

// TestTypedClient: a client typed by GraphQL Code Generator (client preset)
// from the published schema, docs/schema.graphql, type-checks with tsc.
func TestTypedClient(t *testing.T) {
	nodeWith(t, "appclients", "@graphql-codegen/cli")
	npm, err := exec.LookPath("npm")
	if err != nil {
		testenv.Missing(t, "npm")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "run", "--silent", "typed")
	cmd.Dir = "appclients"
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm run typed (graphql-codegen, then tsc): %v\n%s", err, out)
	}
	if _, err := os.Stat("appclients/typed/gql/graphql.ts"); err != nil {
		t.Fatalf("the code generator wrote no types: %v", err)
	}
}
