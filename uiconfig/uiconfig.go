// Package uiconfig is what the host reads of a validated UI config (its
// placement, icon, description, declared state keys, data sources and a2ui
// declaration), and the checks of a tool result shown by a response config
// that need neither a user nor a message: validity against a2ui.schema and
// relevance. The host's response UI selection (package extensions) and the
// preview's verdict on a sample result both run them. It links no database
// or engine.
package uiconfig

import (
	"encoding/json"
	"fmt"

	"pluginhost/jsonschema"
	"pluginhost/models"
)

// Config is what the host reads of a validated config.
type Config struct {
	Placement   *string
	Icon        models.JSON
	Description *string
	// StateKeys are the keys initial_state declares.
	StateKeys map[string]bool
	Sources   []Source
	// A2UI is the response declaration; nil when there is none.
	A2UI *A2UI
	// NavigationItems is how many items a navigation without a
	// selected_state_key has when it persists its selection (under
	// NavigationKey); 0 otherwise.
	NavigationItems int
}

// NavigationKey is the persisted state key of the selected item of a
// navigation that persists without a selected_state_key: the item's index.
// Plugins cannot declare it (a state key starts with a letter).
const NavigationKey = "$navigation"

// Source is a data source: its id and its capability.
type Source struct {
	ID         string `json:"id"`
	Capability string `json:"capability"`
}

// A2UI is a response config's a2ui declaration.
type A2UI struct {
	Version     json.RawMessage `json:"version"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
}

// Read reads what the host needs of a config that passed validation (the
// members it reads then have their types).
func Read(raw []byte) Config {
	var top struct {
		Placement    *string                    `json:"placement"`
		Icon         json.RawMessage            `json:"icon"`
		Description  *string                    `json:"description"`
		InitialState map[string]json.RawMessage `json:"initial_state"`
		DataSources  []Source                   `json:"data_sources"`
		A2UI         *A2UI                      `json:"a2ui"`
		Navigation   *struct {
			SelectedStateKey string            `json:"selected_state_key"`
			Persist          bool              `json:"persist"`
			Items            []json.RawMessage `json:"items"`
		} `json:"navigation"`
	}
	json.Unmarshal(raw, &top)
	c := Config{Placement: top.Placement, Description: top.Description, StateKeys: map[string]bool{},
		Sources: top.DataSources, A2UI: top.A2UI}
	if len(top.Icon) > 0 {
		c.Icon = models.JSON(top.Icon)
	}
	for k := range top.InitialState {
		c.StateKeys[k] = true
	}
	if n := top.Navigation; n != nil && n.Persist && n.SelectedStateKey == "" {
		c.NavigationItems = len(n.Items)
	}
	return c
}

// CheckResult runs the checks of a response selection that need neither a
// user nor a message, validity and relevance, for a tool result of
// capability shown by the response config of extension as the Instance
// instanceID. Each failed check is a Problem; an error means the config
// itself could not be read.
func (c Config) CheckResult(extension, capability, instanceID string, result []byte) ([]models.Problem, error) {
	probs, err := c.validity(result)
	if err != nil {
		return nil, err
	}
	return append(probs, c.relevance(instanceID, extension, capability, result)...), nil
}

// validity checks the result against a2ui.schema with the JSON Schema subset
// engine of capability schemas; each problem names its JSON Pointer into the
// result.
func (c Config) validity(result []byte) ([]models.Problem, error) {
	if c.A2UI == nil || len(c.A2UI.Schema) == 0 {
		return []models.Problem{{Code: models.ResponseValidity, Message: "the extension declares no a2ui.schema, so no result can be shown with it"}}, nil
	}
	schema, err := jsonschema.Compile(c.A2UI.Schema, jsonschema.AnyRoot)
	if err != nil {
		return nil, fmt.Errorf("a2ui.schema of a validated config: %w", err)
	}
	v, err := jsonschema.Decode(result)
	if err != nil {
		return []models.Problem{{Code: models.ResponseValidity, Message: "the result is not valid JSON: " + err.Error()}}, nil
	}
	var out []models.Problem
	for _, p := range schema.Validate(v, "a2ui.schema") {
		out = append(out, models.Problem{Path: p.Path, Code: models.ResponseValidity, Message: p.Code + ": " + p.Message})
	}
	return out, nil
}

// relevance checks that the config reads the capability's result through a
// data source, and that the result's evidence names only the Instance.
func (c Config) relevance(instanceID, extension, capability string, result []byte) []models.Problem {
	var out []models.Problem
	found := false
	for _, src := range c.Sources {
		found = found || src.Capability == capability
	}
	if !found {
		out = append(out, models.Problem{Code: models.ResponseRelevance,
			Message: fmt.Sprintf("extension %q has no data source of capability %s, so it cannot show that capability's result", extension, capability)})
	}
	var r struct {
		Evidence []struct {
			InstanceID *string `json:"instance_id"`
		} `json:"evidence"`
	}
	if json.Unmarshal(result, &r) != nil {
		return out // a result of another shape has no evidence to check
	}
	for i, e := range r.Evidence {
		if e.InstanceID != nil && *e.InstanceID != instanceID {
			out = append(out, models.Problem{Path: fmt.Sprintf("/evidence/%d/instance_id", i), Code: models.ResponseRelevance,
				Message: fmt.Sprintf("the result's evidence names instance %q, not the instance %q of the selected response UI", *e.InstanceID, instanceID)})
		}
	}
	return out
}
