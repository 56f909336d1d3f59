package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"pluginhost/bundle"
	"pluginhost/internal/plugintest"
	"pluginhost/internal/testenv"
)

// weatherPackage signs examples/weather (two screens and a response
// extension) with its files byte for byte, after edit changes them.
func (p *Publisher) weatherPackage(t *testing.T, edit func(files map[string][]byte)) (string, map[string][]byte) {
	t.Helper()
	folder, err := bundle.ReadPlugin(plugintest.Example(t, "../examples/weather"))
	if err != nil {
		t.Fatal(err)
	}
	files := folder.Files
	if edit != nil {
		edit(files)
	}
	pkg, err := bundle.Build(files, p.Key)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(pkg), files
}

// withVersion replaces the manifest's version (and min_host_version when min
// is not empty) in its text, keeping every other byte.
func withVersion(version, min string) func(map[string][]byte) {
	return func(f map[string][]byte) {
		m := strings.Replace(string(f["manifest.json"]), `"version": "1.0.0"`, `"version": "`+version+`"`, 1)
		if min != "" {
			m = strings.Replace(m, `"min_host_version": "1.7.12"`, `"min_host_version": "`+min+`"`, 1)
		}
		f["manifest.json"] = []byte(m)
	}
}

func compactOf(t *testing.T, b []byte) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// rawData posts an operation that must succeed and returns its data member
// as the server wrote it.
func rawData(t *testing.T, c *Client, query string, vars map[string]any) json.RawMessage {
	t.Helper()
	data, errs := c.Do(t, query, vars)
	if len(errs) > 0 {
		t.Fatalf("%s: %+v", query, errs)
	}
	for _, v := range data {
		return v
	}
	t.Fatalf("%s: no data", query)
	return nil
}

// TestHostingOverGraphQL is the app client's path: install a two-screen plugin
// with a response extension, read its configs and capabilities back exactly as
// packaged, keep persisted state over a restart, watch an update arrive as a
// package change, and select a response UI through each check.
func TestHostingOverGraphQL(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		h := newHost(t, b)
		alice, bob := h.user(t, "alice", false), h.user(t, "bob", false)

		var info struct {
			HostInfo struct {
				Version  string
				UISchema int
			}
		}
		alice.Must(t, `{hostInfo{version uiSchema}}`, nil, &info)
		if info.HostInfo.Version == "" || info.HostInfo.UISchema != 2 {
			t.Fatalf("hostInfo = %+v", info.HostInfo)
		}
		// A package that needs one patch more than this host is refused.
		var maj, min, patch int
		fmt.Sscanf(info.HostInfo.Version, "%d.%d.%d", &maj, &min, &patch)
		tooNew, _ := h.pub.weatherPackage(t, withVersion("1.0.0", fmt.Sprintf("%d.%d.%d", maj, min, patch+1)))
		e := alice.Fail(t, "PACKAGE_REJECTED", installMutation, map[string]any{"p": tooNew})
		if !strings.Contains(e.Message, info.HostInfo.Version) {
			t.Fatalf("refusal does not name the host version: %s", e.Message)
		}

		pkg, files := h.pub.weatherPackage(t, withVersion("1.0.0", info.HostInfo.Version))
		var inst struct{ InstallPlugin struct{ ID string } }
		alice.Must(t, installMutation, map[string]any{"p": pkg}, &inst)
		instl := inst.InstallPlugin.ID
		var ci struct{ CreateInstance struct{ ID string } }
		alice.Must(t, instanceMutation, map[string]any{"i": instl, "n": "Home"}, &ci)
		id := ci.CreateInstance.ID

		// Configs and schemas come back as the package's bytes (compacted).
		raw := rawData(t, alice, `{installations{extensions{manifestId point placement icon description config} capabilities{manifestId kind description inputSchema outputSchema runnable scheduleSeconds}}}`, nil)
		var got []struct {
			Extensions []struct {
				ManifestID  string
				Point       string
				Placement   *string
				Icon        json.RawMessage
				Description *string
				Config      json.RawMessage
			}
			Capabilities []struct {
				ManifestID, Kind, Description string
				InputSchema, OutputSchema     json.RawMessage
				Runnable                      bool
				ScheduleSeconds               *int
			}
		}
		noErr(t, json.Unmarshal(raw, &got))
		for i, ext := range []string{"main", "detail", "week", "forecast"} {
			x := got[0].Extensions[i]
			if x.ManifestID != ext || string(x.Config) != compactOf(t, files["ui/"+ext+".json"]) {
				t.Fatalf("extension %d: %s %s, want the bytes of ui/%s.json", i, x.ManifestID, x.Config, ext)
			}
		}
		if x := got[0].Extensions[0]; *x.Placement != "navigation" || string(x.Icon) != `"wb_sunny"` || x.Point != "screen" {
			t.Fatalf("main = %+v", x)
		}
		var m struct {
			Capabilities []struct{ Description string }
		}
		var mraw struct {
			Capabilities []map[string]json.RawMessage `json:"capabilities"`
		}
		json.Unmarshal(files["manifest.json"], &mraw)
		json.Unmarshal(files["manifest.json"], &m)
		c := got[0].Capabilities[0]
		if c.ManifestID != "weather.lookup" || c.Kind != "tool" || !c.Runnable || c.ScheduleSeconds != nil || c.Description != m.Capabilities[0].Description ||
			string(c.InputSchema) != compactOf(t, mraw.Capabilities[0]["input_schema"]) || string(c.OutputSchema) != compactOf(t, mraw.Capabilities[0]["output_schema"]) {
			t.Fatalf("capability = %+v", c)
		}
		alice.Fail(t, "BAD_USER_INPUT", `query($i:ID!){uiConfig(instanceId:$i,extension:"nope"){generation}}`, map[string]any{"i": id})
		bob.Fail(t, "PLUGIN_STORAGE_PERMISSION_DENIED", `query($i:ID!){uiConfig(instanceId:$i,extension:"main"){generation}}`, map[string]any{"i": id})

		// Persisted state: the rules, then a restart.
		const setQ = `mutation($i:ID!,$e:String!,$v:JSON!){setExtensionState(instanceId:$i,extension:$e,values:$v)}`
		for _, row := range []struct {
			values map[string]any
			code   string
		}{
			{map[string]any{"country": "CH"}, "PLUGIN_STORAGE_INVALID"},
			{map[string]any{"favorites": []any{[]any{[]any{[]any{[]any{[]any{[]any{[]any{[]any{1}}}}}}}}}}, "PLUGIN_STORAGE_INVALID"},
			{map[string]any{"city": strings.Repeat("x", 16*1024)}, "PLUGIN_STORAGE_QUOTA_EXCEEDED"},
		} {
			alice.Fail(t, row.code, setQ, map[string]any{"i": id, "e": "main", "v": row.values})
		}
		bob.Fail(t, "PLUGIN_STORAGE_PERMISSION_DENIED", setQ, map[string]any{"i": id, "e": "main", "v": map[string]any{"unit": "kelvin"}})
		if s := rawData(t, alice, setQ, map[string]any{"i": id, "e": "main", "v": map[string]any{"unit": "fahrenheit", "city": "Chur"}}); string(s) != `{"city":"Chur","unit":"fahrenheit"}` {
			t.Fatalf("setExtensionState = %s", s)
		}
		h.Stop(t)
		h.Server = Start(t, b.DSN, h.pub.Dir)
		alice.URL, bob.URL = h.URL, h.URL
		const uiQ = `query($i:ID!,$e:String!){uiConfig(instanceId:$i,extension:$e){instanceId extension point generation config persistedState}}`
		var ui struct {
			UIConfig struct {
				Generation     int
				Config         json.RawMessage
				PersistedState json.RawMessage
			} `json:"uiConfig"`
		}
		alice.Must(t, uiQ, map[string]any{"i": id, "e": "main"}, &ui)
		if ui.UIConfig.Generation != 1 || string(ui.UIConfig.PersistedState) != `{"city":"Chur","unit":"fahrenheit"}` {
			t.Fatalf("after a restart: %+v", ui.UIConfig)
		}

		// A response UI: candidates, a render, a duplicate.
		const candQ = `{responseCandidates{handle instanceId extension description version}}`
		const selQ = `mutation($h:String!,$m:String!,$c:String!,$a:JSON,$r:JSON!){selectResponseUi(handle:$h,messageId:$m,capability:$c,arguments:$a,result:$r){rendered reasons{path code message} instanceId extension generation config data}}`
		type render struct {
			Rendered bool
			Reasons  []struct{ Path, Code string }
			Config   json.RawMessage
			Data     map[string]json.RawMessage
		}
		var cands struct {
			ResponseCandidates []struct{ Handle, InstanceID, Extension string }
		}
		alice.Must(t, candQ, nil, &cands)
		if len(cands.ResponseCandidates) != 1 || cands.ResponseCandidates[0].Extension != "forecast" {
			t.Fatalf("candidates = %+v", cands)
		}
		handle := cands.ResponseCandidates[0].Handle
		result := map[string]any{"summary": "9° in Bern", "data": map[string]any{"city": "Bern", "temperature": 9}}
		var sel struct {
			SelectResponseUI render `json:"selectResponseUi"`
		}
		alice.Must(t, selQ, map[string]any{"h": handle, "m": "msg-1", "c": "weather.lookup", "a": map[string]any{"city": "Bern"}, "r": result}, &sel)
		if !sel.SelectResponseUI.Rendered || string(sel.SelectResponseUI.Config) != compactOf(t, files["ui/forecast.json"]) || sel.SelectResponseUI.Data["answer"] == nil {
			t.Fatalf("render = %+v", sel.SelectResponseUI)
		}
		alice.Must(t, selQ, map[string]any{"h": handle, "m": "msg-1", "c": "weather.lookup", "r": result}, &sel)
		if sel.SelectResponseUI.Rendered || len(sel.SelectResponseUI.Reasons) != 1 || sel.SelectResponseUI.Reasons[0].Code != "duplicate" {
			t.Fatalf("second selection for msg-1 = %+v", sel.SelectResponseUI)
		}
		delete(result["data"].(map[string]any), "city")
		alice.Must(t, selQ, map[string]any{"h": handle, "m": "msg-2", "c": "weather.lookup", "r": result}, &sel)
		if r := sel.SelectResponseUI; r.Rendered || len(r.Reasons) != 1 || r.Reasons[0].Code != "validity" || r.Reasons[0].Path != "/data/city" {
			t.Fatalf("invalid result = %+v", r)
		}
		bob.Must(t, selQ, map[string]any{"h": handle, "m": "msg-3", "c": "weather.lookup", "r": result}, &sel)
		if r := sel.SelectResponseUI; r.Rendered || len(r.Reasons) != 1 || r.Reasons[0].Code != "permission" {
			t.Fatalf("bob's selection = %+v", r)
		}

		// An update reaches an open subscription as a package change with the
		// new generation, and makes the handle stale.
		ws := DialWS(t, h.URL, transportWS)
		ws.Init(alice.Token)
		ws.Subscribe("s", id)
		snap := ws.Change("s")
		if snap.Operation != "snapshot" || snap.Generation != 1 {
			t.Fatalf("snapshot = %+v", snap)
		}
		v2, _ := h.pub.weatherPackage(t, withVersion("1.1.0", ""))
		alice.Must(t, `mutation($i:ID!,$p:String!){updatePlugin(installationId:$i,package:$p){generation}}`, map[string]any{"i": instl, "p": v2}, nil)
		if c := ws.Change("s"); c.Operation != "package" || c.Generation != 2 || c.StorageRevision != snap.StorageRevision+1 {
			t.Fatalf("after the update: %+v", c)
		}
		alice.Fail(t, "PLUGIN_STORAGE_CONFLICT", selQ, map[string]any{"h": handle, "m": "msg-4", "c": "weather.lookup", "r": result})
	})
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
