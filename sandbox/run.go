// Package sandbox runs a plugin's capability: its WebAssembly module, in an
// instance that sees nothing of the host but its standard streams, the clock
// and random bytes, within limits of wall time, memory (linear memory,
// tables, call stack), output and runs at once. A module is a WASI preview 1
// command (a fresh instance each run) or a reactor (an instance restored to
// its initialized state before each run, so that every run starts from the
// same state at a fraction of the cost). Modules are checked by their
// structure (package wasmbin) and compiled in a child process within a
// budget of time and memory, so that no module can take the server down.
//
// Run holds the whole path of one run, in order, from the request to a
// checked result; it knows nothing of databases, so that the server and
// `pluginhost run` share it. Applying the result's host actions is the
// caller's.
package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"time"

	"pluginhost/jsonschema"
	"pluginhost/models"
)

// Triggers of a run.
const (
	TriggerInvoke   = "invoke"
	TriggerSchedule = "schedule"
	TriggerAI       = "ai"
)

// Request is the JSON object a module reads on its standard input.
type Request struct {
	Capability string          `json:"capability"`
	Kind       string          `json:"kind"`
	Trigger    string          `json:"trigger"`
	Arguments  json.RawMessage `json:"arguments"`
	Query      *string         `json:"query"`
	Instance   Instance        `json:"instance"`
	// PluginStorage is present only when the manifest requests storage.
	PluginStorage *PluginStorage `json:"plugin_storage,omitempty"`
	// Round counts the fetch rounds made so far; Fetched holds the answers
	// of the last one, by request id; Carry is what the run that asked for
	// them carried to this one. All are absent on the first run.
	Round   int                    `json:"round,omitempty"`
	Fetched map[string]FetchAnswer `json:"fetched,omitempty"`
	Carry   json.RawMessage        `json:"carry,omitempty"`
}

// Fetch rounds: a module may answer, instead of an ExtensionResult, a list
// of requests for the host to make; the host runs it again with the answers.
const (
	MaxFetchRounds   = 4 // rounds of fetches in one run
	MaxFetchRequests = 4 // requests in one round
	// MaxCarry bounds the JSON a fetch output carries to the next round
	// ("carry"), compact.
	MaxCarry = 64 << 10
)

// FetchRequest is one request a module asks the host to make.
type FetchRequest struct {
	ID           string            `json:"id"`
	Method       string            `json:"method"`
	URL          string            `json:"url"`
	Headers      map[string]string `json:"headers,omitempty"`
	Body         string            `json:"body,omitempty"`
	BodyEncoding string            `json:"body_encoding,omitempty"`
	Connection   string            `json:"connection,omitempty"`
}

// FetchAnswer is the answer to one request: the response, or Error when
// the request could not be made.
type FetchAnswer struct {
	Status       int               `json:"status,omitempty"`
	Headers      map[string]string `json:"headers,omitempty"`
	Body         string            `json:"body,omitempty"`
	BodyEncoding string            `json:"body_encoding,omitempty"`
	Error        string            `json:"error,omitempty"`
}

// Fetcher makes one round of a run's requests, under the host's policy: it
// answers each request, or refuses the round with an error that fails the
// run (network_denied, connection_required). ctx ends at the run's deadline.
type Fetcher func(ctx context.Context, round int, requests []FetchRequest) (map[string]FetchAnswer, error)

// Instance says which Instance a run is for.
type Instance struct {
	ID             string `json:"id"`
	InstallationID string `json:"installation_id"`
	Generation     int64  `json:"generation"`
}

// PluginStorage is the snapshot of the Instance's storage a run reads.
type PluginStorage struct {
	StorageRevision int64             `json:"storage_revision"`
	Namespaces      map[string][]Item `json:"namespaces"`
}

// Item is one stored item in the snapshot.
type Item struct {
	Key      string          `json:"key"`
	Value    json.RawMessage `json:"value"`
	Revision int64           `json:"revision"`
}

// Job is one run to make.
type Job struct {
	// Capability is the capability as the manifest declares it.
	Capability models.Capability
	// Module is its compiled module (Engine.Compile).
	Module *Module
	// Request is what the module reads; Request.Arguments nil is {}.
	Request Request
	// User is whose run it is, for the bound on one user's runs at once;
	// empty for a run of no user (pluginhost run).
	User string
	// Fetch makes the run's fetch rounds; nil refuses them (network_denied).
	Fetch Fetcher
}

// Result is a run that succeeded: the module's ExtensionResult, checked.
type Result struct {
	models.ExtensionResult
	// HostActions is data.host_actions as the module returned it, nil when
	// absent; applying them is the caller's.
	HostActions json.RawMessage
	// Notifications is data.notifications as the module returned it, nil
	// when absent; checking and keeping them is the caller's.
	Notifications json.RawMessage
}

// Report is what every run leaves, whether or not it succeeded.
type Report struct {
	Stderr   []byte
	Duration time.Duration // the module's own time, over every round
	Rounds   int           // fetch rounds made
}

// Run makes one run of a capability, in this order: check the arguments
// against input_schema (BAD_USER_INPUT with each problem), write the request,
// run the module within the limits, read one ExtensionResult from its output
// (bad_output), and check data against output_schema (output_schema with each
// problem). Any failure is an error and nothing of the output is returned;
// a run on an engine that is closed, or closes meanwhile, fails with
// ErrClosed.
func (e *Engine) Run(ctx context.Context, job Job) (*Result, Report, error) {
	var rep Report
	capability := job.Capability
	req := job.Request
	if len(req.Arguments) == 0 || string(req.Arguments) == "null" {
		req.Arguments = json.RawMessage("{}")
	}

	// 1. The arguments, against input_schema.
	if err := checkArguments(capability, req.Arguments); err != nil {
		return nil, rep, err
	}
	if job.Module == nil {
		return nil, rep, models.CapabilityFailed(models.ReasonNoModule, "capability %s has no module to run", capability.ID)
	}

	// 2. The module, in a fresh state, within the limits: it reads the
	// request on standard input and answers an ExtensionResult, or asks for a
	// round of fetches and is run again with the answers. The wall time
	// covers every round and every fetch.
	deadline := time.Now().Add(e.limits.Timeout)
	var res *Result
	for {
		stdin, err := encodeRequest(&req)
		if err != nil {
			return nil, rep, err
		}
		begun := time.Now()
		out, err := e.exec(ctx, job.Module, job.User, req.Instance.ID, req.Trigger == TriggerSchedule, deadline, stdin)
		rep.Duration += time.Since(begun)
		if out != nil {
			rep.Stderr = out.Stderr
		}
		if err != nil {
			return nil, rep, err
		}
		fetches, carry, err := parseFetch(out.Stdout)
		if err != nil {
			return nil, rep, err
		}
		if fetches == nil {
			// 4. One ExtensionResult on standard output.
			if res, err = parseResult(out.Stdout, req.Instance.ID); err != nil {
				return nil, rep, err
			}
			break
		}
		if req.Round == MaxFetchRounds {
			return nil, rep, models.CapabilityFailed(models.ReasonBadOutput, "the module asked for a fetch round after round %d; a run makes at most %d rounds, and the answer after the last must be an ExtensionResult", req.Round, MaxFetchRounds)
		}
		if job.Fetch == nil {
			e := models.CapabilityFailed(models.ReasonNetworkDenied, "capability %s asked to fetch %s, but runs here cannot reach the network", capability.ID, fetches[0].URL)
			e.Request = fetches[0].ID
			if u, err := url.Parse(fetches[0].URL); err == nil {
				e.Host = u.Host
			}
			return nil, rep, e
		}
		fctx, cancel := context.WithDeadline(ctx, deadline)
		answers, err := job.Fetch(fctx, req.Round+1, fetches)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil, rep, ctx.Err()
		case !time.Now().Before(deadline):
			return nil, rep, models.CapabilityFailed(models.ReasonTimeout, "the run, with its fetch round %d, did not end within %s", req.Round+1, e.limits.Timeout)
		case err != nil:
			return nil, rep, err
		}
		rep.Rounds++
		req.Round, req.Fetched, req.Carry = req.Round+1, answers, carry
	}

	// 5. Its data, against output_schema.
	if len(capability.OutputSchema) > 0 {
		s, err := jsonschema.Compile(capability.OutputSchema, jsonschema.ObjectRoot)
		if err != nil {
			return nil, rep, err
		}
		v, err := jsonschema.Decode(res.Data)
		if err != nil {
			return nil, rep, models.CapabilityFailed(models.ReasonBadOutput, "data: %v", err)
		}
		if probs := s.Validate(v, "output_schema"); len(probs) > 0 {
			e := models.CapabilityFailed(models.ReasonOutputSchema, "the result's data breaks the output_schema of %s at %q: %s", capability.ID, probs[0].Path, probs[0].Message)
			e.Problems = probs
			return nil, rep, e
		}
	}
	return res, rep, nil
}

// checkArguments checks arguments, an object, against the capability's
// input_schema when it declares one.
func checkArguments(c models.Capability, args json.RawMessage) error {
	v, err := jsonschema.Decode(args)
	if err != nil {
		return models.Errorf(models.ErrBadUserInput, "arguments are not valid JSON: %v", err)
	}
	if _, ok := v.(jsonschema.Members); !ok {
		if _, ok := v.(map[string]any); !ok {
			return models.Errorf(models.ErrBadUserInput, "arguments must be a JSON object")
		}
	}
	if len(c.InputSchema) == 0 {
		return nil
	}
	s, err := jsonschema.Compile(c.InputSchema, jsonschema.ObjectRoot)
	if err != nil {
		return err
	}
	if probs := s.Validate(v, "input_schema"); len(probs) > 0 {
		e := models.Errorf(models.ErrBadUserInput, "the arguments break the input_schema of %s at %q: %s", c.ID, probs[0].Path, probs[0].Message)
		e.Problems = probs
		return e
	}
	return nil
}

// parseFetch reads standard output as a request for a round of fetches,
// {"fetch": [...]} with an optional "carry" (any JSON, at most MaxCarry
// bytes compact) for the next round: nil when the output is something else
// (an ExtensionResult for parseResult to read); bad_output when it is a
// malformed request.
func parseFetch(stdout []byte) ([]FetchRequest, json.RawMessage, error) {
	var probe struct {
		Fetch json.RawMessage `json:"fetch"`
		Carry json.RawMessage `json:"carry"`
	}
	trimmed := bytes.TrimSpace(stdout)
	if len(trimmed) == 0 || trimmed[0] != '{' || !mayName(trimmed, true, "fetch") ||
		json.Unmarshal(trimmed, &probe) != nil || probe.Fetch == nil {
		return nil, nil, nil
	}
	var raw map[string]json.RawMessage
	json.Unmarshal(trimmed, &raw)
	for name := range raw {
		if name != "fetch" && name != "carry" {
			return nil, nil, models.CapabilityFailed(models.ReasonBadOutput, "a fetch request is one object {\"fetch\": [...], \"carry\": ...} and holds nothing else; %q is not a member of it", name)
		}
	}
	var carry json.RawMessage
	if len(probe.Carry) > 0 && string(probe.Carry) != "null" {
		var compact bytes.Buffer
		if err := json.Compact(&compact, probe.Carry); err != nil {
			return nil, nil, models.CapabilityFailed(models.ReasonBadOutput, "carry: %v", err)
		}
		if compact.Len() > MaxCarry {
			return nil, nil, models.CapabilityFailed(models.ReasonBadOutput, "carry holds %d bytes of JSON (compact); at most %d are carried to the next round: carry less, such as the ids to fetch again", compact.Len(), MaxCarry)
		}
		carry = compact.Bytes()
	}
	dec := json.NewDecoder(bytes.NewReader(probe.Fetch))
	dec.DisallowUnknownFields()
	var reqs []FetchRequest
	if err := dec.Decode(&reqs); err != nil {
		return nil, nil, models.CapabilityFailed(models.ReasonBadOutput, "fetch: %v", err)
	}
	if len(reqs) < 1 || len(reqs) > MaxFetchRequests {
		return nil, nil, models.CapabilityFailed(models.ReasonBadOutput, "fetch holds %d requests; a round has 1 to %d", len(reqs), MaxFetchRequests)
	}
	seen := map[string]bool{}
	for i, r := range reqs {
		switch {
		case r.ID == "" || len(r.ID) > 64:
			return nil, nil, models.CapabilityFailed(models.ReasonBadOutput, "fetch[%d].id must be 1 to 64 characters", i)
		case seen[r.ID]:
			return nil, nil, models.CapabilityFailed(models.ReasonBadOutput, "fetch[%d].id %q is used twice in the round", i, r.ID)
		case r.BodyEncoding != "" && r.BodyEncoding != "base64":
			return nil, nil, models.CapabilityFailed(models.ReasonBadOutput, "fetch[%d].body_encoding %q: want base64 or none", i, r.BodyEncoding)
		}
		seen[r.ID] = true
	}
	return reqs, carry, nil
}

// parseResult reads standard output as exactly one ExtensionResult: summary
// a string, data an object, evidence (optional) about this Instance only.
func parseResult(stdout []byte, instanceID string) (*Result, error) {
	summary, data, evidence, compact, ok := plainResult(stdout)
	if !ok {
		var err error
		if summary, data, evidence, err = decodeResult(stdout); err != nil {
			return nil, err
		}
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil, models.CapabilityFailed(models.ReasonBadOutput, "the result's data must be a JSON object")
	}
	for i, ev := range evidence {
		if ev.InstanceID != instanceID || ev.Type != "plugin_storage" {
			return nil, models.CapabilityFailed(models.ReasonBadOutput, "evidence[%d] must be plugin_storage evidence of this Instance", i)
		}
	}
	res := &Result{ExtensionResult: models.ExtensionResult{Summary: summary, Evidence: evidence}}
	if res.Evidence == nil {
		res.Evidence = []models.Evidence{}
	}
	// The host's own members are the host's: taken out of data before
	// output_schema and the caller see it. Data that cannot name them is
	// not decoded for them.
	if mayName(data, false, "host_actions", "notifications") {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(data, &fields); err != nil {
			return nil, models.CapabilityFailed(models.ReasonBadOutput, "the result's data: %v", err)
		}
		ha, hasActions := fields["host_actions"]
		if hasActions && string(ha) != "null" {
			res.HostActions = ha
		}
		n, hasNotices := fields["notifications"]
		if hasNotices && string(n) != "null" {
			res.Notifications = n
		}
		if hasActions || hasNotices {
			delete(fields, "host_actions")
			delete(fields, "notifications")
			res.Data, _ = json.Marshal(fields)
			return res, nil
		}
	}
	if compact {
		res.Data = bytes.Clone(data)
		return res, nil
	}
	var buf bytes.Buffer
	json.Compact(&buf, data)
	res.Data = buf.Bytes()
	return res, nil
}

// decodeResult reads standard output as one ExtensionResult with
// encoding/json: what plainResult leaves, and the error that says why.
func decodeResult(stdout []byte) (summary string, data json.RawMessage, evidence []models.Evidence, err error) {
	var raw struct {
		Summary  *string           `json:"summary"`
		Data     json.RawMessage   `json:"data"`
		Evidence []models.Evidence `json:"evidence"`
	}
	dec := json.NewDecoder(bytes.NewReader(stdout))
	if err := dec.Decode(&raw); err != nil {
		return "", nil, nil, models.CapabilityFailed(models.ReasonBadOutput, "standard output is not one ExtensionResult object: %v", err)
	}
	if dec.More() {
		return "", nil, nil, models.CapabilityFailed(models.ReasonBadOutput, "standard output holds more than one JSON value")
	}
	if raw.Summary == nil {
		return "", nil, nil, models.CapabilityFailed(models.ReasonBadOutput, "the result has no summary string")
	}
	return *raw.Summary, raw.Data, raw.Evidence, nil
}

// mayName reports whether the JSON text b may hold one of names as a
// member name: quoted as it is, in any case as well when fold is set (as
// encoding/json matches a struct's fields; names must then be ASCII without
// k or s, whose folds include other characters), or b holds a \u escape,
// which could spell it. False means no member of b, at any depth, has one
// of the names.
func mayName(b []byte, fold bool, names ...string) bool {
	if bytes.Contains(b, []byte(`\u`)) {
		return true
	}
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return false
		}
		i += j + 1
		for _, name := range names {
			if end := i + len(name); end < len(b) && b[end] == '"' {
				if s := b[i:end]; string(s) == name || fold && bytes.EqualFold(s, []byte(name)) {
					return true
				}
			}
		}
	}
}
