package preview

import (
	"encoding/json"

	"pluginhost/models"
	"pluginhost/uiconfig"
)

// Problem codes of the fixtures' sample tool result.
const (
	// CodeResponsePoint: a sample tool result is given, but the extension
	// that opens first is not a response extension.
	CodeResponsePoint = "response_point"
)

// InstanceID is the id of the preview's one Instance: the in-page store's
// evidence names it, and a sample result's evidence must name it to be
// relevant.
const InstanceID = "preview-instance"

// sampleResult checks the fixtures' response member: the tool result the AI
// would select the response extension for, {capability, arguments?,
// result}. The result itself may break a2ui.schema: the verdict shows it.
func (c *fixtureChecker) sampleResult(path string, v any) {
	r, ok := c.object(path, v, "capability", "arguments", "result")
	if !ok {
		return
	}
	switch id, ok := r["capability"].(string); {
	case !ok || id == "":
		c.add(path+"/capability", CodeFixtureRequired, "capability names the capability whose result the sample is, such as weather.lookup")
	case c.scope.manifest != nil:
		if _, declared := c.scope.manifest.Capability(id); !declared {
			c.add(path+"/capability", CodeUnknownCapability, "capability %q is not declared by the manifest", id)
		}
	}
	if a, ok := r["arguments"]; ok {
		if _, ok := a.(map[string]any); !ok && a != nil {
			c.add(path+"/arguments", CodeFixtureType, "arguments are the tool call's arguments, an object, not %s", typeName(a))
		}
	}
	if _, ok := r["result"]; !ok {
		c.add(path+"/result", CodeFixtureRequired, "result is the sample tool result (an ExtensionResult) the response extension would show")
	}
}

// Verdict is what the Runtime Inspector shows of a response selection for
// the fixtures' sample tool result: the checks the host runs, with the
// problems of those the preview can run, validity and relevance, by the same
// code as the host (uiconfig, as extensions.Service.Select runs them). Duplicate and permission depend
// on the AI message and the user, and are left to the host.
type Verdict struct {
	// Renders is true when validity and relevance pass: the host renders
	// the response if its duplicate and permission checks pass too.
	Renders bool         `json:"renders"`
	Checks  []CheckState `json:"checks"`
}

// CheckState is one check of a verdict. Passed is nil for a check the
// preview cannot run.
type CheckState struct {
	Check    string           `json:"check"`
	Passed   *bool            `json:"passed"`
	Problems []models.Problem `json:"problems,omitempty"`
	Note     string           `json:"note,omitempty"`
}

// pageResponse is the sample tool result with its verdict.
type pageResponse struct {
	Capability string          `json:"capability"`
	Arguments  any             `json:"arguments,omitempty"`
	Result     json.RawMessage `json:"result"`
	Verdict    Verdict         `json:"verdict"`
}

// responseVerdict runs the checks for the fixtures' sample result against the
// response extension that opens first.
func responseVerdict(ext pageExtension, sample map[string]any) (*pageResponse, error) {
	if ext.Point != models.PointResponse {
		return nil, &FixturesError{[]models.Problem{{Path: "/response", Code: CodeResponsePoint,
			Message: "a sample tool result is shown by a response extension; extension " + ext.ID + " is a " + ext.Point + " extension"}}}
	}
	capability, _ := sample["capability"].(string)
	result, err := json.Marshal(sample["result"])
	if err != nil {
		return nil, err
	}
	probs, err := uiconfig.Read(ext.Config).CheckResult(ext.ID, capability, InstanceID, result)
	if err != nil {
		return nil, err
	}
	byCheck := map[string][]models.Problem{}
	for _, p := range probs {
		byCheck[p.Code] = append(byCheck[p.Code], p)
	}
	v := Verdict{Renders: len(probs) == 0}
	for _, check := range []string{models.ResponseValidity, models.ResponseRelevance} {
		passed := len(byCheck[check]) == 0
		v.Checks = append(v.Checks, CheckState{Check: check, Passed: &passed, Problems: byCheck[check]})
	}
	v.Checks = append(v.Checks,
		CheckState{Check: models.ResponseDuplicate, Note: "checked by the host: an AI message has at most one response container"},
		CheckState{Check: models.ResponsePermission, Note: "checked by the host: the Instance must be the viewer's and enabled"})
	return &pageResponse{Capability: capability, Arguments: sample["arguments"], Result: result, Verdict: v}, nil
}
