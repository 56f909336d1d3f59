// Package devloop is the plugin author's loop (pluginhost dev): it watches a
// plugin folder and, on every change, builds the capabilities whose sources
// changed, validates it, signs it with a development key and installs or
// updates it on a running server, whose open web host pages show the new
// version in place. A change that does not build, validate or install leaves
// the last good version running, and the terminal and the open pages say why.
package devloop

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"pluginhost/bundle"
	"pluginhost/models"
	"pluginhost/pluginbuild"
	"pluginhost/sandbox"
	"pluginhost/validator"
)

// StateDir is the folder of a plugin folder where the loop keeps its
// development key; packages leave it out, as every dot folder.
const StateDir = ".pluginhost"

// Loop is the author's loop over one plugin folder.
type Loop struct {
	Dir    string // the plugin folder
	Server string // the server's base URL, such as http://127.0.0.1:8080
	Token  string // the author's bearer token on it
	// Key signs the packages; nil makes (once) and uses the development key
	// in Dir/.pluginhost/dev.key.
	Key    ed25519.PrivateKey
	Engine *sandbox.Engine // builds (pre-initializes) the modules
	// Settle is how long a watched folder stays still after a change
	// before the change is tried: an editor's save is often several
	// writes.
	Settle time.Duration
	// Poll looks at the folder every Interval instead of watching it: for
	// a folder whose changes the system does not report, such as some
	// shared folders of virtual machines. A folder is polled too where it
	// cannot be watched (on systems other than Linux).
	Poll     bool
	Interval time.Duration // how often a polled folder is looked at
	Out      io.Writer     // what the author reads
	Client   *http.Client

	builder        pluginbuild.Builder
	seen           string // the fingerprint of the folder last tried
	good           string // the version running on the server
	installationID string // its Installation
	instance       string
	lastFailure    string
	// untrusted is set while the server refuses the key: the loop tries
	// again now and then, for an admin may trust it meanwhile.
	untrusted time.Time
	phases    phases // of the last try
}

// phases times the steps of a try, for the author to see where the time
// goes.
type phases struct {
	at    time.Time
	steps []string
}

func (p *phases) start() { p.at = time.Now() }

func (p *phases) end(step string) {
	p.steps = append(p.steps, fmt.Sprintf("%s %v", step, time.Since(p.at).Round(time.Millisecond)))
	p.at = time.Now()
}

func (p *phases) String() string { return strings.Join(p.steps, ", ") }

// DefaultSettle is how long a watched folder stays still after a change
// before it is tried.
const DefaultSettle = 20 * time.Millisecond

// DefaultInterval is how often a polled folder is looked at for changes.
const DefaultInterval = 50 * time.Millisecond

// untrustedRetry is how often a loop whose key the server does not trust
// tries again.
const untrustedRetry = 5 * time.Second

// Run tries the folder now, then again after every change, until ctx ends.
// On Linux the folder is watched (inotify) and a change is tried once the
// folder stays still for Settle; elsewhere, or with Poll, it is looked at
// every Interval and a change is tried once it stays the same for one
// Interval. It returns nil when ctx ends; only a loop that cannot start
// (no key, no server) returns an error.
func (l *Loop) Run(ctx context.Context) error {
	if err := l.start(ctx); err != nil {
		return err
	}
	var w *watcher
	if !l.Poll {
		var err error
		if w, err = watchFolder(l.Dir); err != nil {
			fmt.Fprintf(l.Out, "%s cannot be watched (%v): it is looked at every %v instead\n", l.Dir, err, l.Interval)
		}
	}
	if w != nil {
		defer func() {
			if w != nil {
				w.close()
			}
		}()
		fmt.Fprintf(l.Out, "watching %s; stop with Ctrl-C\n", l.Dir)
	} else {
		fmt.Fprintf(l.Out, "watching %s (every %v); stop with Ctrl-C\n", l.Dir, l.Interval)
	}
	for {
		fp, err := l.fingerprint()
		switch {
		case err != nil:
			if err.Error() != l.lastFailure {
				l.lastFailure = err.Error()
				fmt.Fprintf(l.Out, "cannot read %s: %v\n", l.Dir, err)
			}
		case fp != l.seen:
			if w == nil {
				// Polled, a change is tried once the folder stays the same
				// for one interval.
				if !sleep(ctx, l.Interval) {
					return nil
				}
				if again, err := l.fingerprint(); err != nil || again != fp {
					continue
				}
			}
			l.seen = fp
			l.try(ctx)
		case !l.untrusted.IsZero() && time.Since(l.untrusted) > untrustedRetry:
			l.try(ctx)
		}
		if w != nil {
			if err := w.err(); err != nil {
				w.close()
				w = nil
				fmt.Fprintf(l.Out, "%s can no longer be watched (%v): it is looked at every %v instead\n", l.Dir, err, l.Interval)
			}
		}
		if w == nil {
			if !sleep(ctx, l.Interval) {
				return nil
			}
			continue
		}
		var retry time.Duration
		if !l.untrusted.IsZero() {
			retry = max(time.Until(l.untrusted.Add(untrustedRetry)), time.Millisecond)
		}
		if !w.wait(ctx, l.Settle, retry) {
			return nil
		}
	}
}

// sleep waits for d; it returns false when ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Once tries the folder once: it returns the error that kept it from the
// server, or nil when the server runs it.
func (l *Loop) Once(ctx context.Context) error {
	if err := l.start(ctx); err != nil {
		return err
	}
	return l.try(ctx)
}

// start loads or makes the key and makes sure the server trusts it.
func (l *Loop) start(ctx context.Context) error {
	if l.Client == nil {
		l.Client = &http.Client{Timeout: 2 * time.Minute}
	}
	if l.Out == nil {
		l.Out = io.Discard
	}
	if l.Interval <= 0 {
		l.Interval = DefaultInterval
	}
	if l.Settle <= 0 {
		l.Settle = DefaultSettle
	}
	l.Server = strings.TrimRight(l.Server, "/")
	if l.builder.Engine == nil {
		l.builder = pluginbuild.Builder{Engine: l.Engine, Log: l.Out}
	}
	if l.Key != nil {
		return nil
	}
	// The key's folder is the loop's only write outside the build: it
	// stays in the plugin folder too.
	root, err := os.OpenRoot(l.Dir)
	if err != nil {
		return fmt.Errorf("the plugin folder: %w", err)
	}
	err = pluginbuild.Inside(root, StateDir+"/dev.key")
	root.Close()
	if err != nil {
		return err
	}
	prefix := filepath.Join(l.Dir, StateDir, "dev")
	key, err := bundle.LoadPrivateKey(prefix + ".key")
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(prefix), 0o700); err != nil {
			return err
		}
		if _, err := bundle.GenerateKey(prefix); err != nil {
			return err
		}
		fmt.Fprintf(l.Out, "made the development key %s.key: it signs only what this loop installs\n", prefix)
		key, err = bundle.LoadPrivateKey(prefix + ".key")
	}
	if err != nil {
		return err
	}
	l.Key = key
	pub := bundle.FormatPublicKey(key.Public().(ed25519.PublicKey))
	var out struct{ TrustPublisherKey string }
	err = l.graphql(ctx, `mutation($k:String!){trustPublisherKey(publicKey:$k)}`, map[string]any{"k": pub}, &out)
	switch {
	case err == nil:
		fmt.Fprintf(l.Out, "the server trusts the development key %s\n", out.TrustPublisherKey)
	case models.ErrorCode(err) == models.ErrPermissionDenied || strings.Contains(err.Error(), "admin"):
		// A server may trust it already (its --trusted-keys folder); if not,
		// the install says so.
		fmt.Fprintf(l.Out, "this token cannot make the server trust the development key (admins only): "+
			"if installs are refused as signed by an untrusted key, add %s.pub to the server's --trusted-keys folder\n", prefix)
	default:
		return fmt.Errorf("the server at %s: %w", l.Server, err)
	}
	return nil
}

// folderError is a change that does not build or validate: the author
// fixes the folder.
type folderError struct{ error }

func (e folderError) Unwrap() error { return e.error }

// untrustedError is an install refused because the server does not trust
// the key that signed it.
type untrustedError struct {
	error
	keyID string
}

// try builds, validates, signs and installs the folder; a failure is shown,
// in the terminal and on the open pages, and leaves the last good version
// running.
func (l *Loop) try(ctx context.Context) error {
	begun := time.Now()
	retry := !l.untrusted.IsZero()
	if !retry {
		fmt.Fprintf(l.Out, "\n%s  change seen: building %s\n", begun.Format("15:04:05"), l.Dir)
	}
	err := l.deliver(ctx)
	if err == nil {
		if retry {
			fmt.Fprintln(l.Out, "the server trusts the development key now")
		}
		l.untrusted, l.lastFailure = time.Time{}, ""
		fmt.Fprintf(l.Out, "done in %v (%s)\n", time.Since(begun).Round(time.Millisecond), l.phases.String())
		return nil
	}
	kept := "nothing of it is installed yet"
	if l.good != "" {
		kept = "the server keeps running " + l.good
	}
	var folder folderError
	var untrusted untrustedError
	var next string
	switch {
	case errors.As(err, &untrusted):
		l.untrusted = time.Now()
		if err.Error() == l.lastFailure {
			return err // said already; still waiting
		}
		next = l.trustSteps(untrusted.keyID)
	case errors.As(err, &folder):
		l.untrusted = time.Time{}
		next = "fix the folder and save again"
	default:
		l.untrusted = time.Time{}
		next = "save again to retry"
	}
	l.lastFailure = err.Error()
	if untrusted.keyID != "" {
		fmt.Fprintf(l.Out, "NOT UPDATED: %v\n(%s)\n%s\n", err, kept, next)
	} else {
		fmt.Fprintf(l.Out, "NOT UPDATED: %v\n(%s; %s)\n", err, kept, next)
	}
	l.report(ctx, err)
	return err
}

// trustSteps says how the server comes to trust the development key.
func (l *Loop) trustSteps(keyID string) string {
	pub := bundle.FormatPublicKey(l.Key.Public().(ed25519.PublicKey))
	query, _ := json.Marshal(map[string]string{"query": fmt.Sprintf(`mutation { trustPublisherKey(publicKey: %q) }`, pub)})
	return fmt.Sprintf("The server does not trust the development key %s. To trust it, an admin of the server runs\n"+
		"  curl -sS %s/graphql -H 'Authorization: Bearer ADMIN_TOKEN' -H 'Content-Type: application/json' --data '%s'\n"+
		"or adds %s to the server's --trusted-keys folder and restarts it.\n"+
		"(pluginhost dev started with an admin's token trusts its key itself: pluginhost token create --user NAME --admin.)\n"+
		"This loop tries again every %v.",
		keyID, l.Server, query, filepath.Join(l.Dir, StateDir, "dev.pub"), untrustedRetry)
}

// report tells the open pages of the installed version why the change was
// not installed; a server that cannot be told is left alone.
func (l *Loop) report(ctx context.Context, failure error) {
	if l.installationID == "" {
		return
	}
	msg := failure.Error()
	if len(msg) > models.MaxDevelopmentMessage {
		msg = strings.ToValidUTF8(msg[:models.MaxDevelopmentMessage-3], "") + "..."
	}
	var out struct{ ReportDevelopment int }
	if err := l.graphql(ctx, `mutation($i:ID!,$m:String!){reportDevelopment(installationId:$i,message:$m)}`,
		map[string]any{"i": l.installationID, "m": msg}, &out); err != nil {
		fmt.Fprintf(l.Out, "(the open pages could not be told: %v)\n", err)
	}
}

func (l *Loop) deliver(ctx context.Context) error {
	l.phases = phases{}
	l.phases.start()
	if _, err := l.builder.Build(ctx, l.Dir); err != nil {
		return folderError{fmt.Errorf("build: %w", err)}
	}
	l.phases.end("build")
	folder, err := bundle.ReadPlugin(l.Dir)
	if err != nil {
		return folderError{err}
	}
	m, report := validator.CheckPlugin(folder.Files)
	l.phases.end("validate")
	if !report.Valid || len(report.Warnings) > 0 {
		report.WriteText(l.Out)
	}
	if !report.Valid {
		var b strings.Builder
		fmt.Fprintf(&b, "%s is not a valid plugin (%d errors, each with its file and JSON Pointer)", l.Dir, len(report.Errors))
		for i, p := range report.Errors {
			if i == 3 {
				fmt.Fprintf(&b, "\n  and %d more", len(report.Errors)-i)
				break
			}
			fmt.Fprintf(&b, "\n  %s %s [%s] %s", p.File, p.Path, p.Code, p.Message)
		}
		return folderError{errors.New(b.String())}
	}
	installed, err := l.installation(ctx, m.ID)
	if err != nil {
		return err
	}
	version, err := devVersion(m.Version, installed)
	if err != nil {
		return err
	}
	if err := setVersion(folder.Files, version); err != nil {
		return err
	}
	// Stored, not compressed, it is made and opened quicker; a plugin too
	// large for that is compressed.
	pkg, err := bundle.BuildStored(folder.Files, l.Key)
	if err != nil {
		pkg, err = bundle.Build(folder.Files, l.Key)
	}
	if err != nil {
		return err
	}
	l.phases.end("sign")
	var res struct {
		Installation struct {
			ID         string
			Version    string
			Generation int
			Instances  []struct{ ID string }
		}
	}
	fields := `{id version generation instances{id}}`
	if installed == nil {
		err = l.graphqlPackage(ctx, `mutation($p:String!){installation:installPlugin(package:$p)`+fields+`}`, nil, pkg, &res)
	} else {
		err = l.graphqlPackage(ctx, `mutation($i:ID!,$p:String!){installation:updatePlugin(installationId:$i,package:$p)`+fields+`}`,
			map[string]any{"i": installed.ID}, pkg, &res)
	}
	if err != nil {
		keyID := bundle.KeyID(l.Key.Public().(ed25519.PublicKey))
		if models.ErrorCode(err) == models.ErrPackageRejected && strings.Contains(err.Error(), keyID+" is not trusted") {
			return untrustedError{fmt.Errorf("the server refused %s %s: %w", m.ID, version, err), keyID}
		}
		return fmt.Errorf("the server refused %s %s: %w", m.ID, version, err)
	}
	l.phases.end("install")
	in := res.Installation
	l.good = m.ID + " " + in.Version
	l.installationID = in.ID
	verb := "updated"
	if installed == nil {
		verb = "installed"
	}
	fmt.Fprintf(l.Out, "%s %s %s (generation %d); open pages show it\n", verb, m.ID, in.Version, in.Generation)
	if len(in.Instances) == 0 {
		var inst struct{ CreateInstance struct{ ID string } }
		if err := l.graphql(ctx, `mutation($i:ID!){createInstance(installationId:$i,name:"Development"){id}}`, map[string]any{"i": in.ID}, &inst); err != nil {
			return fmt.Errorf("create an Instance: %w", err)
		}
		l.instance = inst.CreateInstance.ID
	} else if l.instance == "" {
		l.instance = in.Instances[0].ID
	}
	for _, e := range m.Extensions {
		if e.Point == "screen" {
			fmt.Fprintf(l.Out, "its screen: %s/app/%s/%s\n", l.Server, l.instance, e.ID)
			break
		}
	}
	return nil
}

// installed is the user's Installation of the plugin.
type installed struct {
	ID, Version, PublisherKeyID string
}

func (l *Loop) installation(ctx context.Context, pluginID string) (*installed, error) {
	var out struct {
		Installations []struct {
			installed
			PluginID string
		}
	}
	if err := l.graphql(ctx, `{installations{id pluginId version publisherKeyId}}`, nil, &out); err != nil {
		return nil, fmt.Errorf("the server at %s: %w", l.Server, err)
	}
	for _, in := range out.Installations {
		if in.PluginID != pluginID {
			continue
		}
		if id := bundle.KeyID(l.Key.Public().(ed25519.PublicKey)); in.PublisherKeyID != id {
			return nil, fmt.Errorf("%s is installed signed by key %s, not by the development key %s: an update keeps its publisher, "+
				"so uninstall it first (uninstallPlugin; with data_policy retain its data stays), or sign with that key (--key)",
				pluginID, in.PublisherKeyID, id)
		}
		i := in.installed
		l.installationID = i.ID
		return &i, nil
	}
	return nil, nil
}

// devVersion is the version of the next development package of a manifest
// version: VERSION-dev.N (VERSION.dev.N when it has a pre-release already),
// N one more than the installed one's, so that every update raises it.
func devVersion(version string, in *installed) (string, error) {
	base := version + "-dev."
	if strings.Contains(version, "-") {
		base = version + ".dev."
	}
	n := 1
	if in != nil {
		if rest, ok := strings.CutPrefix(in.Version, base); ok {
			if k, err := strconv.Atoi(rest); err == nil {
				n = k + 1
			}
		}
	}
	next := base + strconv.Itoa(n)
	if in != nil && models.CompareVersions(next, in.Version) <= 0 {
		return "", fmt.Errorf("the installed version %s is newer than the manifest's %s: raise the manifest's version", in.Version, version)
	}
	return next, nil
}

// setVersion rewrites the manifest's version, keeping the rest as it is.
func setVersion(files map[string][]byte, version string) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(files[validator.ManifestFile], &m); err != nil {
		return err
	}
	m["version"], _ = json.Marshal(version)
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	files[validator.ManifestFile] = b
	return nil
}

// fingerprint sums the names, sizes and times of the folder's files, but for
// dot folders and the modules the build writes.
func (l *Loop) fingerprint() (string, error) {
	built := map[string]bool{}
	root, err := os.OpenRoot(l.Dir)
	if err != nil {
		return "", err
	}
	raw, err := root.ReadFile(validator.ManifestFile)
	root.Close()
	if err == nil {
		var m models.Manifest
		if json.Unmarshal(raw, &m) == nil {
			for _, c := range m.Capabilities {
				if c.Source != "" && c.Module != "" {
					built[filepath.Clean(filepath.FromSlash(c.Module))] = true
				}
			}
		}
	}
	h := sha256.New()
	err = filepath.WalkDir(l.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(l.Dir, p)
		if rel != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() || built[rel] {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00%d\n", rel, info.Size(), info.ModTime().UnixNano())
		return nil
	})
	return string(h.Sum(nil)), err
}

// graphql posts one operation and decodes its data into out; an error of
// the answer is returned with its code.
func (l *Loop) graphql(ctx context.Context, query string, vars map[string]any, out any) error {
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	return l.post(ctx, body, out)
}

// graphqlPackage is graphql with a signed package as the variable $p,
// written into the body base64 rather than marshalled with the other
// variables: the megabytes of a module need no JSON escapes, and
// encoding/json would scan and copy them.
func (l *Loop) graphqlPackage(ctx context.Context, query string, vars map[string]any, pkg []byte, out any) error {
	if vars == nil {
		vars = map[string]any{}
	}
	head, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	// {"query":...,"variables":{...}}: $p goes before the last two braces.
	head = head[:len(head)-2]
	if len(vars) > 0 {
		head = append(head, ',')
	}
	head = append(head, `"p":"`...)
	n := base64.StdEncoding.EncodedLen(len(pkg))
	body := make([]byte, len(head)+n, len(head)+n+3)
	copy(body, head)
	base64.StdEncoding.Encode(body[len(head):], pkg)
	return l.post(ctx, append(body, `"}}`...), out)
}

// post posts a GraphQL request's body and decodes the answer's data into
// out.
func (l *Loop) post(ctx context.Context, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.Server+"/graphql", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+l.Token)
	resp, err := l.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var answer struct {
		Data   json.RawMessage
		Errors []struct {
			Message    string
			Extensions struct {
				Code     string
				Problems []models.Problem
			}
		}
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&answer); err != nil {
		return fmt.Errorf("HTTP %d, not a GraphQL answer: %v", resp.StatusCode, err)
	}
	if len(answer.Errors) > 0 {
		e := answer.Errors[0]
		var b strings.Builder
		b.WriteString(e.Message)
		for _, p := range e.Extensions.Problems {
			fmt.Fprintf(&b, "\n  %s %s [%s] %s", p.File, p.Path, p.Code, p.Message)
		}
		return models.Errorf(models.Code(e.Extensions.Code), "%s", b.String())
	}
	return json.Unmarshal(answer.Data, out)
}
