package gqlhttp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"pluginhost/gqlhttp"
	"pluginhost/internal/fixture"
	"pluginhost/internal/testenv"
	"pluginhost/models"
)

// TestUsualUpdateAsExecutor: the usual storageUpdate, which runs without
// the executor, answers byte for byte as the executor does (status, type,
// body), on success and on every error; a request of another form, or
// with a variable of another type, takes the executor's way. Each case runs
// on two Instances in the same state: on one the usual way, on the other
// the executor's (the same request with "extensions":{}, which the usual
// way leaves to it).
func TestUsualUpdateAsExecutor(t *testing.T) {
	ctx := context.Background()
	env := fixture.New(t, testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/t.db"})
	token, user, err := env.Auth.CreateToken(ctx, "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	installed := env.Install(t, user, fixture.Manifest("com.test.usual", fixture.NS("n", 65536), fixture.NS("m", 65536)))
	usual, other := env.Instance(t, user, installed), env.Instance(t, user, installed)
	for _, id := range []string{usual.ID, other.ID} {
		if _, err := env.Store.Create(ctx, models.Caller{UserID: user.ID}, id, "n", "k", models.JSON(`{"count":0}`)); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(env.Server.Handler)
	defer srv.Close()
	send := func(body map[string]any, accept string) (int, string, string) {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", srv.URL+"/graphql", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(out)
	}
	times := regexp.MustCompile(`\d{4}-\d\d-\d\dT[0-9:.]+(Z|[+-]\d\d:\d\d)`)
	const usualQuery = `mutation($i:ID!,$v:JSON!,$r:Int!){storageUpdate(instanceId:$i,namespace:"n",key:"k",value:$v,revision:$r){evidence{revision}}}`
	const everything = `mutation U($i:ID!,$ns:String,$k:String!,$v:JSON!,$r:Int!){u:storageUpdate(instanceId:$i,namespace:$ns,key:$k,value:$v,revision:$r){__typename s:summary data evidence{__typename type instanceId namespace key revision}}}`
	served := gqlhttp.UpdatesServed(env.Server.GraphQL)
	for _, tc := range []struct {
		name   string
		query  string
		op     string
		vars   map[string]any // "$i" is the Instance's id
		accept string
		usual  bool // the usual way answers it
	}{
		{"the usual update", usualQuery, "", map[string]any{"v": map[string]any{"count": 1}, "r": 1}, "", true},
		{"a stale revision", usualQuery, "", map[string]any{"v": map[string]any{"count": 1}, "r": 1}, "", true},
		{"a stale revision, graphql-response", usualQuery, "", map[string]any{"v": 1, "r": 1}, "application/graphql-response+json", true},
		{"every field, aliases, a named operation", everything, "U", map[string]any{"ns": "n", "k": "k", "v": map[string]any{"b": "<&> é \u2028", "a": []any{1.5, true, nil}}, "r": 2}, "", true},
		{"the default namespace", everything, "", map[string]any{"k": "k", "v": "x", "r": 3}, "", true},
		{"a namespace not declared", everything, "", map[string]any{"ns": "zz", "k": "k", "v": "x", "r": 4}, "", true},
		{"a key that does not exist", everything, "", map[string]any{"ns": "m", "k": "nope", "v": "x", "r": 1}, "", true},
		{"an invalid key", everything, "", map[string]any{"ns": "n", "k": "", "v": "x", "r": 1}, "", true},
		{"literal arguments", `mutation($i:ID!){storageUpdate(instanceId:$i,namespace:"n",key:"k",value:$v,revision:4){summary}}`, "", map[string]any{"v": 5}, "", false},
		{"a literal revision", `mutation($i:ID!,$v:JSON!){storageUpdate(instanceId:$i,namespace:"n",key:"k",value:$v,revision:4){summary}}`, "", map[string]any{"v": 5}, "", true},
		{"a revision given as a string", usualQuery, "", map[string]any{"v": 1, "r": "5"}, "", false},
		{"a revision past 64 bits", usualQuery, "", map[string]any{"v": 1, "r": json.Number("99999999999999999999")}, "", false},
		{"a null value", usualQuery, "", map[string]any{"v": nil, "r": 5}, "", false},
		{"another operation name", everything, "V", map[string]any{"k": "k", "v": 1, "r": 5}, "", false},
		{"a fragment", `mutation($i:ID!,$v:JSON!,$r:Int!){storageUpdate(instanceId:$i,namespace:"n",key:"k",value:$v,revision:$r){...F}} fragment F on ExtensionResult{summary}`, "", map[string]any{"v": 1, "r": 5}, "", false},
		{"a directive", `mutation($i:ID!,$v:JSON!,$r:Int!){storageUpdate(instanceId:$i,namespace:"n",key:"k",value:$v,revision:$r){summary @include(if:true)}}`, "", map[string]any{"v": 1, "r": 5}, "", false},
		{"two fields", `mutation($i:ID!,$v:JSON!,$r:Int!){storageUpdate(instanceId:$i,namespace:"n",key:"k",value:$v,revision:$r){summary} b:storageUpdate(instanceId:$i,namespace:"n",key:"k",value:$v,revision:6){summary}}`, "", map[string]any{"v": 1, "r": 5}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var answers [2]string
			for i, inst := range []*models.Instance{other, usual} { // the executor's way first: it caches the document
				vars := map[string]any{"i": inst.ID}
				for k, v := range tc.vars {
					vars[k] = v
				}
				body := map[string]any{"query": tc.query, "variables": vars}
				if tc.op != "" {
					body["operationName"] = tc.op
				}
				if inst == other {
					body["extensions"] = map[string]any{}
				}
				status, ct, out := send(body, tc.accept)
				out = times.ReplaceAllString(strings.ReplaceAll(out, inst.ID, "ID"), "TIME")
				answers[i] = fmt.Sprintf("%d %s %s", status, ct, out)
			}
			if answers[0] != answers[1] {
				t.Errorf("the executor's way answers\n%s\nthe usual way\n%s", answers[0], answers[1])
			}
			now := gqlhttp.UpdatesServed(env.Server.GraphQL)
			if got := now > served; got != tc.usual {
				t.Errorf("answered the usual way: %t, want %t (%s)", got, tc.usual, answers[1])
			}
			served = now
		})
	}
}

// TestUsualUpdateChargesWork: the usual storageUpdate charges the user's
// work rate as the executor's way does: with another user at work, the same
// number of updates pass before the same 429.
func TestUsualUpdateChargesWork(t *testing.T) {
	ctx := context.Background()
	passed := map[bool]int{}
	answers := map[bool]string{}
	for _, usual := range []bool{true, false} {
		env := fixture.New(t, testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/t.db"},
			fixture.Limits(gqlhttp.Limits{UserWorkPerSecond: 1, MaxQueryCost: 200, MaxBodyBytes: 1024, InFlightWait: 50 * time.Millisecond}))
		alice, user, err := env.Auth.CreateToken(ctx, "alice", false)
		if err != nil {
			t.Fatal(err)
		}
		bob, _, err := env.Auth.CreateToken(ctx, "bob", false)
		if err != nil {
			t.Fatal(err)
		}
		inst := env.Instance(t, user, env.Install(t, user, fixture.Manifest("com.test.work", fixture.NS("n", 65536))))
		if _, err := env.Store.Create(ctx, models.Caller{UserID: user.ID}, inst.ID, "n", "k", models.JSON(`1`)); err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(env.Server.Handler)
		post := func(token string, body map[string]any) (int, string) {
			b, _ := json.Marshal(body)
			req, _ := http.NewRequest("POST", srv.URL+"/graphql", bytes.NewReader(b))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			out, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(out)
		}
		update := func(rev int) (int, string) {
			body := map[string]any{"query": `mutation($i:ID!,$v:JSON!,$r:Int!){storageUpdate(instanceId:$i,namespace:"n",key:"k",value:$v,revision:$r){evidence{revision}}}`,
				"variables": map[string]any{"i": inst.ID, "v": rev, "r": rev}}
			if !usual {
				body["extensions"] = map[string]any{}
			}
			return post(alice, body)
		}
		if status, out := update(1); status != 200 { // alone: not charged; the document is cached
			t.Fatalf("the first update: %d %s", status, out)
		}
		before := gqlhttp.UpdatesServed(env.Server.GraphQL)
		for rev := 2; rev < 12; rev++ {
			if status, out := post(bob, map[string]any{"query": `{viewer{id}}`}); status != 200 {
				t.Fatalf("bob: %d %s", status, out)
			}
			status, out := update(rev)
			if status != 200 {
				answers[usual] = fmt.Sprintf("%d %s", status, out)
				break
			}
			passed[usual]++
		}
		if served := gqlhttp.UpdatesServed(env.Server.GraphQL) > before; served != usual {
			t.Errorf("answered the usual way: %t, want %t", served, usual)
		}
		srv.Close()
	}
	if passed[true] != passed[false] || answers[true] != answers[false] || !strings.Contains(answers[true], "TOO_MANY_REQUESTS") {
		t.Errorf("with bob at work, the usual way passed %d updates, then %s; the executor's way %d, then %s",
			passed[true], answers[true], passed[false], answers[false])
	}
}
