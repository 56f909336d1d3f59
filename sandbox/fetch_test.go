package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"pluginhost/internal/wasmtest"
	"pluginhost/models"
)

// answering is a Fetcher that answers each request with its round and id,
// and records the rounds it was asked for.
type answering struct {
	mu     sync.Mutex
	rounds []int
}

func (a *answering) fetch(_ context.Context, round int, reqs []FetchRequest) (map[string]FetchAnswer, error) {
	a.mu.Lock()
	a.rounds = append(a.rounds, round)
	a.mu.Unlock()
	out := map[string]FetchAnswer{}
	for _, r := range reqs {
		out[r.ID] = FetchAnswer{Status: 200, Body: fmt.Sprintf("round %d, %s %s", round, r.Method, r.ID)}
	}
	return out, nil
}

func fetchArgs(rounds int, requests ...string) string {
	var rs []string
	for _, id := range requests {
		rs = append(rs, fmt.Sprintf(`{"id":%q,"method":"GET","url":"https://api.example.com/%s"}`, id, id))
	}
	return fmt.Sprintf(`{"rounds":%d,"requests":[%s]}`, rounds, strings.Join(rs, ","))
}

// A module asks for rounds of fetches and is run again with each round's
// answers, from a clean state each time, up to the bound of rounds and of
// requests in a round.
func TestFetchRounds(t *testing.T) {
	e := newEngine(t, Limits{})
	m := compileBytes(t, e, wasmtest.Reactor(t, reactors, "fetch"))
	for _, tt := range []struct {
		name   string
		args   string
		rounds int    // the rounds made
		reason string // of the failure, or "" for a result
	}{
		{"one round", fetchArgs(1, "a"), 1, ""},
		{"four rounds of four requests, the bounds", fetchArgs(4, "a", "b", "c", "d"), 4, ""},
		{"a fifth round", fetchArgs(5, "a"), 4, models.ReasonBadOutput},
		{"five requests in a round", fetchArgs(1, "a", "b", "c", "d", "e"), 0, models.ReasonBadOutput},
		{"no request", `{"rounds":1,"requests":[]}`, 0, models.ReasonBadOutput},
		{"an id twice", fetchArgs(1, "a", "a"), 0, models.ReasonBadOutput},
		{"an unknown body encoding", `{"rounds":1,"requests":[{"id":"a","method":"GET","url":"https://x.example/","body_encoding":"hex"}]}`, 0, models.ReasonBadOutput},
		{"a member beside fetch", `{"raw":"{\"fetch\":[{\"id\":\"a\",\"method\":\"GET\",\"url\":\"https://x.example/\"}],\"summary\":\"x\"}"}`, 0, models.ReasonBadOutput},
		{"an unknown member of a request", `{"raw":"{\"fetch\":[{\"id\":\"a\",\"method\":\"GET\",\"url\":\"https://x.example/\",\"cookie\":\"x\"}]}"}`, 0, models.ReasonBadOutput},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := &answering{}
			j := job(m, models.Capability{}, tt.args)
			j.Fetch = a.fetch
			res, rep, err := e.Run(context.Background(), j)
			if tt.reason != "" {
				if f := failure(t, err); f.Reason != tt.reason {
					t.Fatalf("got %v, want %s", err, tt.reason)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if rep.Rounds != tt.rounds || len(a.rounds) != tt.rounds {
				t.Fatalf("%d rounds reported, %d fetched (%v); want %d", rep.Rounds, len(a.rounds), a.rounds, tt.rounds)
			}
			for i, r := range a.rounds {
				if r != i+1 {
					t.Fatalf("rounds fetched %v, want 1, 2, ...", a.rounds)
				}
			}
			if tt.reason != "" {
				return
			}
			var data struct {
				Round   int
				Fetched map[string]FetchAnswer
			}
			json.Unmarshal(res.Data, &data)
			if data.Round != tt.rounds || data.Fetched["a"].Body != fmt.Sprintf("round %d, GET a", tt.rounds) {
				t.Fatalf("the last run saw %+v", data)
			}
		})
	}
}

// Without a fetcher a run cannot reach the network; a fetcher's refusal
// fails the run as it says; the wall time covers the fetches.
func TestFetchRefusedAndTimed(t *testing.T) {
	e := newEngine(t, Limits{Timeout: time.Second})
	m := compileBytes(t, e, wasmtest.Reactor(t, reactors, "fetch"))
	j := job(m, models.Capability{}, fetchArgs(1, "a"))
	if _, _, err := e.Run(context.Background(), j); failure(t, err).Reason != models.ReasonNetworkDenied ||
		failure(t, err).Request != "a" || failure(t, err).Host != "api.example.com" {
		t.Fatalf("no fetcher: %v, want network_denied naming request a and its host", err)
	}
	j.Fetch = func(context.Context, int, []FetchRequest) (map[string]FetchAnswer, error) {
		return nil, models.CapabilityFailed(models.ReasonConnectionRequired, "connection github is not connected")
	}
	if _, _, err := e.Run(context.Background(), j); failure(t, err).Reason != models.ReasonConnectionRequired {
		t.Fatalf("a refusing fetcher: %v", err)
	}
	j.Fetch = func(ctx context.Context, _ int, _ []FetchRequest) (map[string]FetchAnswer, error) {
		<-ctx.Done() // a fetch that takes longer than the run may
		return nil, errors.New("cut off")
	}
	begun := time.Now()
	_, _, err := e.Run(context.Background(), j)
	if f := failure(t, err); f.Reason != models.ReasonTimeout {
		t.Fatalf("a slow fetch: %v", err)
	}
	if d := time.Since(begun); d > 10*time.Second {
		t.Fatalf("the run went on for %v past its second", d)
	}
}

// A fetch output's carry reaches the next round's input, and that round's
// only; it is at most MaxCarry bytes of JSON (compact): at the bound it is
// carried, one byte past it the run fails saying both sizes.
func TestFetchCarry(t *testing.T) {
	e := newEngine(t, Limits{})
	m := compileBytes(t, e, wasmtest.Reactor(t, reactors, "fetch"))
	run := func(t *testing.T, args string) (map[string]json.RawMessage, error) {
		t.Helper()
		j := job(m, models.Capability{}, args)
		j.Fetch = (&answering{}).fetch
		res, _, err := e.Run(context.Background(), j)
		if err != nil {
			return nil, err
		}
		var data struct{ Request map[string]json.RawMessage }
		json.Unmarshal(res.Data, &data)
		return data.Request, nil
	}

	t.Run("round after round", func(t *testing.T) {
		req, err := run(t, `{"rounds":3,"requests":[{"id":"a","method":"GET","url":"https://api.example.com/a"}],"carry":{"city":"Oslo"}}`)
		if err != nil {
			t.Fatal(err)
		}
		want := `{"previous":{"previous":{"previous":null,"round":0,"value":{"city":"Oslo"}},"round":1,"value":{"city":"Oslo"}},"round":2,"value":{"city":"Oslo"}}`
		if string(req["carry"]) != want {
			t.Fatalf("the last run was carried %s, want %s", req["carry"], want)
		}
	})
	t.Run("a round that carries nothing", func(t *testing.T) {
		req, err := run(t, fetchArgs(2, "a"))
		if _, ok := req["carry"]; err != nil || ok {
			t.Fatalf("carried %s (%v) when nothing was", req["carry"], err)
		}
	})

	raw := func(carry string) string {
		out, _ := json.Marshal(map[string]any{"rounds": 1, "raw": `{"fetch":[{"id":"a","method":"GET","url":"https://api.example.com/a"}], "carry": ` + carry + `}`})
		return string(out)
	}
	for _, tt := range []struct {
		name  string
		carry string // as the module writes it
		want  string // what the next round reads, or the failure
		fails bool
	}{
		{"at the bound", `"` + strings.Repeat("x", MaxCarry-2) + `"`, `"` + strings.Repeat("x", MaxCarry-2) + `"`, false},
		{"at the bound once compact", "[\n  \"" + strings.Repeat("x", MaxCarry-4) + "\"\n]", `["` + strings.Repeat("x", MaxCarry-4) + `"]`, false},
		{"one byte past the bound", `"` + strings.Repeat("x", MaxCarry-1) + `"`, "carry holds 65537 bytes of JSON (compact); at most 65536 are carried to the next round", true},
		{"null carries nothing", `null`, "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, err := run(t, raw(tt.carry))
			if tt.fails {
				if f := failure(t, err); f.Reason != models.ReasonBadOutput || !strings.Contains(f.Message, tt.want) {
					t.Fatalf("got %v, want bad_output saying %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(req["carry"]) != tt.want {
				t.Fatalf("the next round read a carry of %d bytes, want %d", len(req["carry"]), len(tt.want))
			}
		})
	}
	if _, err := run(t, `{"rounds":1,"raw":"{\"fetch\":[{\"id\":\"a\",\"method\":\"GET\",\"url\":\"https://x.example/\"}],\"carried\":1}"}`); failure(t, err).Reason != models.ReasonBadOutput ||
		!strings.Contains(err.Error(), `"carried" is not a member`) {
		t.Fatalf("a member beside fetch and carry: %v", err)
	}
}
