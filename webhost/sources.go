package webhost

import (
	"context"
	"encoding/json"
	"sync"

	"pluginhost/binding"
	"pluginhost/models"
)

// The server runs a screen's first storage reads for the page, so that the
// first screen shows its data without a request of its own: the data
// sources loaded at open (trigger load) of capability host.storage.list or
// host.storage.get (reads, which change nothing and reach nothing outside),
// whose arguments and query read nothing but the screen's state (its
// initial state with what was persisted) and its route. The page puts
// their answers in its host cache under the keys the runtime computes; a
// source the server could not run, or resolved otherwise than the page
// does, is simply loaded by the page.

// preloadable are the capabilities the server runs for a first screen.
var preloadable = map[string]bool{"host.storage.list": true, "host.storage.get": true}

// runMutation is the runtime's invoke (live.js), at the page's generation.
const runMutation = `mutation($i: ID!, $c: String!, $a: JSON, $q: String, $g: Int) { invoke(instanceId: $i, capability: $c, arguments: $a, query: $q, generation: $g) { summary data evidence { type instanceId namespace key revision } } }`

// Source is a data source of a first screen the server ran, with its
// answer (the invoke's ExtensionResult).
type Source struct {
	Capability string          `json:"capability"`
	Query      *string         `json:"query"`
	Arguments  map[string]any  `json:"arguments"`
	Result     json.RawMessage `json:"result"`
}

// firstSources runs the first screen's storage reads for the user; the
// start is the answer to StartQuery. It returns them with the package
// generation they were read at.
func (s *Server) firstSources(ctx context.Context, user *models.User, credential, instanceID string, start *Preload, route map[string]string) ([]Source, int) {
	if start == nil {
		return nil, 0
	}
	var answer struct {
		Data struct {
			Start *struct {
				Generation     int
				PersistedState map[string]any
				Config         struct {
					InitialState map[string]any `json:"initial_state"`
					DataSources  []struct {
						ID         string
						Capability string
						Trigger    string
						Query      *string
						Arguments  map[string]any
					} `json:"data_sources"`
				}
			}
		}
	}
	if json.Unmarshal(start.Body, &answer) != nil || answer.Data.Start == nil {
		return nil, 0
	}
	st := answer.Data.Start
	state := map[string]any{}
	for k, v := range st.Config.InitialState {
		state[k] = v
	}
	for k, v := range st.PersistedState {
		if _, declared := st.Config.InitialState[k]; declared {
			state[k] = v
		}
	}
	r := map[string]any{}
	for k, v := range route {
		r[k] = v
	}
	scope := map[string]any{"state": state, "context": map[string]any{"route": r}}
	var todo []Source
	for _, d := range st.Config.DataSources {
		if d.Trigger == "manual" || !preloadable[d.Capability] {
			continue
		}
		args, ok := resolve(d.Arguments, scope)
		if !ok {
			continue
		}
		src := Source{Capability: d.Capability, Arguments: map[string]any{}}
		if args != nil {
			src.Arguments = args.(map[string]any)
		}
		if d.Query != nil {
			q, ok := resolve(*d.Query, scope)
			if !ok {
				continue
			}
			text := binding.Text(q)
			src.Query = &text
		}
		todo = append(todo, src)
	}
	var wg sync.WaitGroup
	for i := range todo {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out struct {
				Data struct {
					Invoke json.RawMessage
				}
				Errors []json.RawMessage
			}
			vars := map[string]any{"i": instanceID, "c": todo[i].Capability, "a": todo[i].Arguments, "q": nil, "g": st.Generation}
			if todo[i].Query != nil {
				vars["q"] = *todo[i].Query
			}
			if json.Unmarshal(s.Execute(ctx, user, runMutation, vars), &out) == nil && len(out.Errors) == 0 && len(out.Data.Invoke) > 0 {
				todo[i].Result = redact(out.Data.Invoke, credential)
			}
		}()
	}
	wg.Wait()
	var done []Source
	for _, src := range todo {
		if src.Result != nil {
			done = append(done, src)
		}
	}
	return done, st.Generation
}

// resolve resolves every string inside a JSON value as the runtime does
// (resolveValue: a string that is one whole binding keeps its type); it
// reports false when a binding reads anything but the state or the route,
// which the server does not know as the page will.
func resolve(v any, scope map[string]any) (any, bool) {
	switch x := v.(type) {
	case string:
		if !binding.MayBind(x) {
			return x, true
		}
		t, err := binding.Parse(x)
		if err != nil {
			return nil, false
		}
		for _, p := range t.Parts {
			if p.Path == nil {
				continue
			}
			if root := p.Path.Root(); root != "state" && !(root == "context" && len(p.Path) > 1 && p.Path[1].Name == "route") {
				return nil, false
			}
		}
		return t.Eval(scope), true
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, ok := resolve(e, scope)
			if !ok {
				return nil, false
			}
			out[i] = r
		}
		return out, true
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, ok := resolve(e, scope)
			if !ok {
				return nil, false
			}
			out[k] = r
		}
		return out, true
	}
	return v, true
}
