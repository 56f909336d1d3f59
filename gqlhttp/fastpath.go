package gqlhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"pluginhost/auth"
	"pluginhost/bytecache"
	"pluginhost/graph"
	"pluginhost/models"
)

// updates runs the usual storageUpdate request without the executor: a
// mutation of one storageUpdate field, sent before (so its document is in
// the executor's cache, parsed and validated), selecting the result's
// summary, data and evidence. It answers exactly as the executor does (the
// same values from the same resolver, written by the same marshallers, the
// same errors through the same presenter), within the same bounds: the
// request was admitted and charged as every request is, and the
// operation's cost, worked out once for its document, is checked and
// charged as MutateOperationContext does. Anything else, or any variable
// not of its declared type, goes the executor's way.
type updates struct {
	limits  *Limits
	gate    *gate
	docs    *bytecache.Cache[*ast.QueryDocument]
	resolve graph.MutationResolver
	present graphql.ErrorPresenterFunc

	mu     sync.Mutex
	plans  map[string]*updatePlan // by document; nil: not of the usual form
	served atomic.Int64           // the requests answered this way
}

// maxUpdatePlans bounds the documents updates keeps a plan (or its absence)
// for; past it, it starts again empty.
const maxUpdatePlans = 256

// updatePlan is how one document's storageUpdate runs.
type updatePlan struct {
	opName string
	field  *ast.Field
	cost   int
	// The arguments: each a variable's name, or a literal.
	instanceID, namespace, key, value, revision argSource
	sel                                         []resultField
}

// argSource is where an argument's value comes from.
type argSource struct {
	variable string // "" for a literal, or an argument not given
	literal  any    // a string or an int64 (nil: not given)
}

// resultField is one field of the selection of ExtensionResult or Evidence.
type resultField struct {
	alias, name string
	sub         []resultField // of evidence
}

func newUpdates(limits *Limits, g *gate, docs *bytecache.Cache[*ast.QueryDocument], resolve graph.MutationResolver, present graphql.ErrorPresenterFunc) *updates {
	return &updates{limits: limits, gate: g, docs: docs, resolve: resolve, present: present, plans: map[string]*updatePlan{}}
}

// serve answers p if it is the usual storageUpdate; false leaves it,
// untouched, to the executor.
func (u *updates) serve(w http.ResponseWriter, r *http.Request, media string, p *graphql.RawParams) bool {
	if p.Extensions != nil || len(p.Query) > u.limits.MaxQueryBytes {
		return false
	}
	plan := u.plan(r.Context(), p.Query)
	if plan == nil || p.OperationName != "" && p.OperationName != plan.opName {
		return false
	}
	var (
		instanceID, key string
		namespace       *string
		value           models.JSON
		revision        int
		ok              bool
	)
	if instanceID, ok = plan.instanceID.str(p.Variables, false); !ok {
		return false
	}
	if key, ok = plan.key.str(p.Variables, false); !ok {
		return false
	}
	if plan.namespace.variable != "" || plan.namespace.literal != nil {
		ns, ok := plan.namespace.str(p.Variables, true)
		if !ok {
			return false
		}
		if ns != "" || !plan.namespace.null(p.Variables) {
			namespace = &ns
		}
	}
	if revision, ok = plan.revision.int(p.Variables); !ok {
		return false
	}
	v := p.Variables[plan.value.variable]
	if plan.value.variable == "" || v == nil || value.UnmarshalGQL(v) != nil {
		return false
	}
	ctx := r.Context()
	u.served.Add(1)
	if user, ok := auth.UserFrom(ctx); ok {
		if err := u.gate.spend(ctx, user.ID, plan.cost); err != nil {
			u.served.Add(-1)
			return false // the executor's way refuses it, with its answer
		}
	}
	fctx := graphql.WithFieldContext(ctx, &graphql.FieldContext{Object: "Mutation", Field: graphql.CollectedField{Field: plan.field}, IsMethod: true, IsResolver: true})
	res, err := u.resolve.StorageUpdate(fctx, instanceID, namespace, key, value, revision)
	if err != nil {
		err = graphql.AddFieldLocationToError(fctx, err)
	} else if res == nil {
		err = errors.New("must not be null")
	}
	if err != nil {
		// As the executor's resolveField and AddError present it.
		writeResponse(w, media, http.StatusOK, &graphql.Response{Errors: gqlerror.List{u.present(fctx, graphql.ErrorOnPath(fctx, err))}, Data: json.RawMessage("null")}, false)
		return true
	}
	var b bytes.Buffer
	b.WriteByte('{')
	graphql.MarshalString(plan.field.Alias).MarshalGQL(&b)
	b.WriteByte(':')
	writeResult(&b, plan.sel, res)
	b.WriteByte('}')
	writeResponse(w, media, http.StatusOK, &graphql.Response{Data: b.Bytes()}, false)
	return true
}

// writeResult writes an ExtensionResult's selected fields as the executor
// does.
func writeResult(b *bytes.Buffer, sel []resultField, res *models.ExtensionResult) {
	writeObject(b, sel, func(f resultField) {
		switch f.name {
		case "__typename":
			graphql.MarshalString("ExtensionResult").MarshalGQL(b)
		case "summary":
			graphql.MarshalString(res.Summary).MarshalGQL(b)
		case "data":
			res.Data.MarshalGQL(b)
		case "evidence":
			b.WriteByte('[')
			for j := range res.Evidence {
				if j > 0 {
					b.WriteByte(',')
				}
				writeEvidence(b, f.sub, &res.Evidence[j])
			}
			b.WriteByte(']')
		}
	})
}

func writeEvidence(b *bytes.Buffer, sel []resultField, e *models.Evidence) {
	writeObject(b, sel, func(f resultField) {
		switch f.name {
		case "__typename":
			graphql.MarshalString("Evidence").MarshalGQL(b)
		case "type":
			graphql.MarshalString(e.Type).MarshalGQL(b)
		case "instanceId":
			graphql.MarshalID(e.InstanceID).MarshalGQL(b)
		case "namespace":
			graphql.MarshalString(e.Namespace).MarshalGQL(b)
		case "key":
			graphql.MarshalString(e.Key).MarshalGQL(b)
		case "revision":
			graphql.MarshalInt64(e.Revision).MarshalGQL(b)
		}
	})
}

// writeObject writes an object of the selected fields, each under its
// alias, its value written by value.
func writeObject(b *bytes.Buffer, sel []resultField, value func(resultField)) {
	b.WriteByte('{')
	for i, f := range sel {
		if i > 0 {
			b.WriteByte(',')
		}
		graphql.MarshalString(f.alias).MarshalGQL(b)
		b.WriteByte(':')
		value(f)
	}
	b.WriteByte('}')
}

// plan returns the plan of a document, made on its first use after the
// executor cached it; nil when it is not the usual storageUpdate.
func (u *updates) plan(ctx context.Context, query string) *updatePlan {
	u.mu.Lock()
	plan, known := u.plans[query]
	u.mu.Unlock()
	if known {
		return plan
	}
	doc, ok := u.docs.Get(ctx, query)
	if !ok {
		return nil // not yet parsed and validated: the executor's way does it
	}
	plan = makePlan(doc, u.limits)
	u.mu.Lock()
	if len(u.plans) >= maxUpdatePlans {
		clear(u.plans)
	}
	u.plans[query] = plan
	u.mu.Unlock()
	return plan
}

// makePlan returns the plan of a validated document, or nil.
func makePlan(doc *ast.QueryDocument, limits *Limits) *updatePlan {
	if len(doc.Operations) != 1 || len(doc.Fragments) > 0 || limits.MaxResponseBytes < 1<<20 {
		return nil
	}
	op := doc.Operations[0]
	if op.Operation != ast.Mutation || len(op.Directives) > 0 || len(op.SelectionSet) != 1 {
		return nil
	}
	f, ok := op.SelectionSet[0].(*ast.Field)
	if !ok || f.Name != "storageUpdate" || len(f.Directives) > 0 {
		return nil
	}
	cost := operationCost(op, nil)
	if cost > float64(limits.MaxQueryCost) {
		return nil
	}
	plan := &updatePlan{opName: op.Name, field: f, cost: int(cost)}
	// Each variable of the type its argument takes, without a default.
	want := map[string]string{"instanceId": "ID!", "namespace": "String", "key": "String!", "value": "JSON!", "revision": "Int!"}
	for _, a := range f.Arguments {
		var src argSource
		switch a.Value.Kind {
		case ast.Variable:
			d := op.VariableDefinitions.ForName(a.Value.Raw)
			if d == nil || d.DefaultValue != nil || len(d.Directives) > 0 {
				return nil
			}
			if t := d.Type.String(); t != want[a.Name] && !(a.Name == "namespace" && t == "String!") {
				return nil
			}
			src.variable = a.Value.Raw
		case ast.StringValue:
			if a.Name == "value" || a.Name == "revision" {
				return nil
			}
			src.literal = a.Value.Raw
		case ast.IntValue:
			v, err := a.Value.Value(nil)
			if a.Name != "revision" || err != nil {
				return nil
			}
			src.literal = v
		default:
			return nil
		}
		switch a.Name {
		case "instanceId":
			plan.instanceID = src
		case "namespace":
			plan.namespace = src
		case "key":
			plan.key = src
		case "value":
			plan.value = src
		case "revision":
			plan.revision = src
		default:
			return nil
		}
	}
	if plan.sel = resultFields(f.SelectionSet, map[string][]string{"": {"__typename", "summary", "data", "evidence"},
		"evidence": {"__typename", "type", "instanceId", "namespace", "key", "revision"}}, ""); plan.sel == nil {
		return nil
	}
	return plan
}

// resultFields returns a selection of plain fields (no fragment, directive,
// argument or repeated response name) among those allowed, or nil.
func resultFields(set ast.SelectionSet, allowed map[string][]string, of string) []resultField {
	var out []resultField
	seen := map[string]bool{}
	for _, s := range set {
		f, ok := s.(*ast.Field)
		if !ok || len(f.Directives) > 0 || len(f.Arguments) > 0 || seen[f.Alias] || !contains(allowed[of], f.Name) {
			return nil
		}
		seen[f.Alias] = true
		rf := resultField{alias: f.Alias, name: f.Name}
		if f.Name == "evidence" {
			if rf.sub = resultFields(f.SelectionSet, allowed, "evidence"); rf.sub == nil {
				return nil
			}
		}
		out = append(out, rf)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// str returns a string argument: a literal, or a variable that holds a
// string (or, when nullable, null or nothing, as "").
func (a argSource) str(vars map[string]any, nullable bool) (string, bool) {
	if a.variable == "" {
		s, ok := a.literal.(string)
		return s, ok
	}
	v, given := vars[a.variable]
	if !given || v == nil {
		return "", nullable
	}
	s, ok := v.(string)
	return s, ok
}

// null reports whether a nullable argument is null or not given.
func (a argSource) null(vars map[string]any) bool {
	if a.variable == "" {
		return a.literal == nil
	}
	return vars[a.variable] == nil
}

// int returns an Int! argument: a literal, or a variable that holds a JSON
// integer that fits in 64 bits.
func (a argSource) int(vars map[string]any) (int, bool) {
	if a.variable == "" {
		n, ok := a.literal.(int64)
		return int(n), ok
	}
	num, ok := vars[a.variable].(json.Number)
	if !ok {
		return 0, false
	}
	n, err := num.Int64()
	return int(n), err == nil
}
