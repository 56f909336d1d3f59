package gqlhttp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"

	"pluginhost/auth"
	"pluginhost/bytecache"
	"pluginhost/models"
)

// queryGuard bounds what one GraphQL operation may cost, in the order the
// costs arise:
//
//  1. Automatic persisted queries (the Apollo convention): a request may
//     name its document by {"extensions": {"persistedQuery": {"version": 1,
//     "sha256Hash": ...}}} alone; an unknown hash is answered
//     "PersistedQueryNotFound", and the client sends the document with its
//     hash, which is kept in a cache bounded by bytes.
//  2. Before the document is parsed: its length (MaxQueryBytes) and tokens
//     (MaxQueryTokens). Before it is validated: the fields it selects with
//     fragments expanded (MaxQueryFields), since validation compares fields
//     pairwise.
//  3. After validation: its cost (MaxQueryCost), in which each object costs
//     1 times the sizes of the lists around it (a limit argument where there
//     is one, the real bound of the list where there is one, else an assumed
//     size) and expensive fields cost their weight.
//  4. While it runs: the bytes its results hold (MaxResponseBytes). Past
//     them no more fields are resolved and the answer is one error, with no
//     data.
//
// Every refusal is BAD_USER_INPUT with extensions.reason naming the limit.
type queryGuard struct {
	limits *Limits
	docs   *bytecache.Cache[*ast.QueryDocument] // the executor's parsed-document cache
	apq    *bytecache.Cache[string]
	gate   *gate // charges each operation's cost to its user's work rate
	es     graphql.ExecutableSchema
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationParameterMutator
	graphql.OperationContextMutator
	graphql.OperationInterceptor
	graphql.FieldInterceptor
} = (*queryGuard)(nil)

func (*queryGuard) ExtensionName() string { return "QueryGuard" }

func (g *queryGuard) Validate(es graphql.ExecutableSchema) error {
	g.es = es
	return nil
}

// limitError is a refusal by one of the guard's limits.
func limitError(reason, format string, args ...any) *gqlerror.Error {
	return &gqlerror.Error{Message: fmt.Sprintf(format, args...), Extensions: map[string]any{"code": string(models.ErrBadUserInput), "reason": reason}}
}

// persistedQueryNotFound is the Apollo convention's answer to an unknown hash.
const persistedQueryNotFound = "PersistedQueryNotFound"

func (g *queryGuard) MutateOperationParameters(ctx context.Context, p *graphql.RawParams) *gqlerror.Error {
	var hash string
	if pq, ok := p.Extensions["persistedQuery"].(map[string]any); ok {
		h, _ := pq["sha256Hash"].(string)
		if fmt.Sprint(pq["version"]) != "1" || len(h) != 64 {
			return limitError("PERSISTED_QUERY_INVALID", "persistedQuery needs version 1 and a sha256Hash of 64 hex digits")
		}
		hash = strings.ToLower(h)
		if p.Query == "" {
			q, ok := g.apq.Get(ctx, hash)
			if !ok {
				return limitError("PERSISTED_QUERY_NOT_FOUND", persistedQueryNotFound)
			}
			p.Query = q
			return nil // it passed the bounds when it was kept
		}
	} else if p.Extensions["persistedQuery"] != nil {
		return limitError("PERSISTED_QUERY_INVALID", "persistedQuery must be an object")
	}
	if err := g.checkDocument(ctx, p.Query); err != nil {
		return err
	}
	if hash != "" {
		sum := sha256.Sum256([]byte(p.Query))
		if hex.EncodeToString(sum[:]) != hash {
			return limitError("PERSISTED_QUERY_HASH_MISMATCH", "persistedQuery.sha256Hash is not the SHA-256 of the query")
		}
		g.apq.Add(ctx, hash, p.Query)
	}
	return nil
}

// checkDocument applies the bounds of step 2 to a document not yet cached.
func (g *queryGuard) checkDocument(ctx context.Context, query string) *gqlerror.Error {
	if len(query) > g.limits.MaxQueryBytes {
		return limitError("QUERY_TOO_LARGE", "the query has %d bytes; at most %d are allowed", len(query), g.limits.MaxQueryBytes)
	}
	if _, ok := g.docs.Get(ctx, query); ok {
		return nil // parsed and validated before
	}
	doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: query}, g.limits.MaxQueryTokens)
	if err != nil {
		if gqlErr, ok := err.(*gqlerror.Error); ok {
			if strings.HasPrefix(gqlErr.Message, "exceeded token limit") {
				return limitError("QUERY_TOO_MANY_TOKENS", "the query has more than %d tokens", g.limits.MaxQueryTokens)
			}
			errcode.Set(gqlErr, errcode.ParseFailed)
			return gqlErr
		}
		return limitError("QUERY_INVALID", "the query cannot be parsed")
	}
	if err := checkNumbers(doc); err != nil {
		return err
	}
	c := fieldCounter{doc: doc, max: g.limits.MaxQueryFields, seen: map[string]int{}}
	for _, op := range doc.Operations {
		if n := c.count(op.SelectionSet, 0); n > g.limits.MaxQueryFields {
			return limitError("QUERY_TOO_MANY_FIELDS", "the operation selects more than %d fields (fragments expanded); at most %d are allowed", g.limits.MaxQueryFields, g.limits.MaxQueryFields)
		}
	}
	return nil
}

// checkNumbers refuses number literals out of the range of int64 and
// float64 anywhere in a document (arguments, defaults, directives), which the
// GraphQL layer cannot convert: an Int argument's range is checked by
// validation, but a JSON argument takes any literal.
func checkNumbers(doc *ast.QueryDocument) *gqlerror.Error {
	var bad string
	var value func(v *ast.Value)
	value = func(v *ast.Value) {
		if v == nil || bad != "" {
			return
		}
		switch v.Kind {
		case ast.IntValue:
			if _, err := strconv.ParseInt(v.Raw, 10, 64); err != nil {
				bad = v.Raw
			}
		case ast.FloatValue:
			if f, err := strconv.ParseFloat(v.Raw, 64); err != nil || math.IsInf(f, 0) {
				bad = v.Raw
			}
		}
		for _, c := range v.Children {
			value(c.Value)
		}
	}
	args := func(list ast.ArgumentList, dirs ast.DirectiveList) {
		for _, a := range list {
			value(a.Value)
		}
		for _, d := range dirs {
			for _, a := range d.Arguments {
				value(a.Value)
			}
		}
	}
	var set func(ast.SelectionSet)
	set = func(ss ast.SelectionSet) {
		for _, sel := range ss {
			switch s := sel.(type) {
			case *ast.Field:
				args(s.Arguments, s.Directives)
				set(s.SelectionSet)
			case *ast.InlineFragment:
				args(nil, s.Directives)
				set(s.SelectionSet)
			case *ast.FragmentSpread:
				args(nil, s.Directives)
			}
		}
	}
	for _, op := range doc.Operations {
		for _, v := range op.VariableDefinitions {
			value(v.DefaultValue)
		}
		args(nil, op.Directives)
		set(op.SelectionSet)
	}
	for _, f := range doc.Fragments {
		args(nil, f.Directives)
		set(f.SelectionSet)
	}
	if bad != "" {
		if len(bad) > 40 {
			bad = bad[:40] + "..."
		}
		return limitError("NUMBER_OUT_OF_RANGE", "the number %s is out of range: integers fit in 64 bits, floats are finite doubles", bad)
	}
	return nil
}

// fieldCounter counts the fields of a selection set with fragments expanded,
// stopping past max (fragments may spread each other many times over).
type fieldCounter struct {
	doc  *ast.QueryDocument
	max  int
	seen map[string]int // fragment name: its count; -1 while being counted
}

func (c *fieldCounter) count(set ast.SelectionSet, depth int) int {
	n := 0
	for _, sel := range set {
		if n > c.max || depth > 64 {
			return c.max + 1
		}
		switch s := sel.(type) {
		case *ast.Field:
			n += 1 + c.count(s.SelectionSet, depth+1)
		case *ast.InlineFragment:
			n += c.count(s.SelectionSet, depth+1)
		case *ast.FragmentSpread:
			k, ok := c.seen[s.Name]
			switch {
			case ok && k < 0:
				// a cycle: validation refuses it
			case ok:
				n += k
			default:
				c.seen[s.Name] = -1
				k = 0
				if f := c.doc.Fragments.ForName(s.Name); f != nil {
					k = c.count(f.SelectionSet, depth+1)
				}
				c.seen[s.Name] = k
				n += k
			}
		}
	}
	return n
}

func (g *queryGuard) MutateOperationContext(ctx context.Context, op *graphql.OperationContext) *gqlerror.Error {
	if op.Operation == nil {
		return nil
	}
	cost := operationCost(op.Operation, op.Variables)
	if cost > float64(g.limits.MaxQueryCost) {
		return limitError("QUERY_TOO_COSTLY", "the operation costs %s; at most %d is allowed (each object counts once per item of the lists around it)",
			costString(cost), g.limits.MaxQueryCost)
	}
	if user, ok := auth.UserFrom(ctx); ok {
		if err := g.gate.spend(ctx, user.ID, int(cost)); err != nil {
			return limitError(err.reason, "%s", err.message)
		}
	}
	return nil
}

func costString(c float64) string {
	if c >= 1e15 {
		return "more than 10^15"
	}
	return fmt.Sprintf("%.0f", c)
}

// Assumed sizes of lists with no limit argument: their real bound where
// there is one (namespaces), else a size that a large account reaches.
const (
	// DefaultListSize is the assumed size of a list not named below.
	DefaultListSize = 20
)

// listSizes are the sizes assumed of lists, by Type.field.
var listSizes = map[string]float64{
	"Query.installations":        20,
	"Installation.instances":     10,
	"Installation.namespaces":    models.MaxNamespaces,
	"Instance.usage":             models.MaxNamespaces,
	"AiTool.namespaces":          models.MaxNamespaces,
	"Query.aiTools":              50,
	"ExtensionResult.evidence":   models.MaxListLimit,
	"ValidationReport.errors":    50,
	"ValidationReport.warnings":  50,
	"Installation.permissions":   8,
	"Instance.grants":            8,
	"Installation.capabilities":  32,
	"Query.savedEntities":        100,
	"Query.uiConfigs":            32,
	"Installation.uiExtensions":  32,
	"Instance.uiConfigs":         32,
	"Query.storageAuditEntries":  100,
	"Query.capabilityRuns":       100,
	"CapabilityRunPage.runs":     100,
	"Query.tokens":               100,
	"Query.publisherKeys":        100,
	"Installation.instancesPage": 100,
}

// fieldWeight is the cost of an expensive field besides what it selects,
// with its arguments; its unit is about one KiB of answer or one query.
func fieldWeight(key string, args map[string]any) float64 {
	switch key {
	case "Query.pluginStorageSnapshot":
		return models.MaxInstallationBytes / 1024 // up to 512 KiB of items
	case "Query.storageItems":
		return 8 + 2*float64(sizeArg(args, "limit", models.MaxListLimit)) // up to 256 KiB of items
	case "Query.storageItem":
		return models.MaxValueBytes / 1024
	case "Query.validateManifest", "Query.validateUiConfig":
		return 50
	case "Mutation.installPlugin", "Mutation.updatePlugin":
		return 200
	case "Mutation.invoke", "Mutation.aiInvoke", "Mutation.applyCapabilityResult":
		return 50
	}
	if strings.HasPrefix(key, "Mutation.") || strings.HasPrefix(key, "Subscription.") {
		return 10
	}
	return 0
}

// sizeArg returns the argument name that sizes a list (limit, or first of
// a connection), or def without one.
func sizeArg(args map[string]any, name string, def int64) int64 {
	switch v := args[name].(type) {
	case int64:
		return max(v, 1)
	case int:
		return max(int64(v), 1)
	case float64:
		return max(int64(v), 1)
	}
	return def
}

// operationCost is the cost of an operation (step 3 of queryGuard).
func operationCost(op *ast.OperationDefinition, vars map[string]any) float64 {
	return setCost(op.SelectionSet, vars, 0, 0)
}

// setCost is the cost of one selection set; page is the limit or first
// argument of the field that holds it (0 for none), the size of the lists
// it pages (a connection's edges and nodes).
func setCost(set ast.SelectionSet, vars map[string]any, page int64, depth int) float64 {
	if depth > 64 {
		return 1e18
	}
	var total float64
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			total += fieldCost(s, vars, page, depth)
		case *ast.InlineFragment:
			total += setCost(s.SelectionSet, vars, page, depth+1)
		case *ast.FragmentSpread:
			if s.Definition != nil {
				total += setCost(s.Definition.SelectionSet, vars, page, depth+1)
			}
		}
	}
	return min(total, 1e18)
}

func fieldCost(f *ast.Field, vars map[string]any, page int64, depth int) float64 {
	if f.Definition == nil || strings.HasPrefix(f.Name, "__") {
		// __typename, and introspection (bounded by the schema and the
		// validator's introspection depth rule).
		return float64(len(f.SelectionSet))
	}
	parent := ""
	if f.ObjectDefinition != nil {
		parent = f.ObjectDefinition.Name
	}
	key := parent + "." + f.Name
	args := f.ArgumentMap(vars)
	ownPage := int64(0)
	for _, size := range []struct {
		name string
		max  int64
	}{{"limit", models.MaxListLimit}, {"first", models.MaxPageSize}} {
		if _, ok := args[size.name]; ok {
			ownPage = sizeArg(args, size.name, size.max)
		} else if hasArg(f.Definition, size.name) {
			ownPage = size.max
		}
		if ownPage > 0 {
			break
		}
	}
	mult := 1.0
	if f.Definition.Type.Elem != nil { // a list
		switch {
		case ownPage > 0:
			mult = float64(ownPage)
		case page > 0:
			mult = float64(page)
		case listSizes[key] > 0:
			mult = listSizes[key]
		default:
			mult = DefaultListSize
		}
	}
	self := 0.0
	if len(f.SelectionSet) > 0 {
		self = 1 // an object
	}
	return fieldWeight(key, args) + mult*(self+setCost(f.SelectionSet, vars, ownPage, depth+1))
}

func hasArg(def *ast.FieldDefinition, name string) bool {
	return def.Arguments.ForName(name) != nil
}

// responseBudget counts the bytes an operation's results hold.
type responseBudget struct {
	max      int64
	used     atomic.Int64
	exceeded atomic.Bool
}

type budgetKey struct{}

// InterceptOperation gives each query and mutation its response budget and
// answers one error, without data, when the budget was exceeded.
//
// A query or mutation that did not come in its own HTTP request (it came
// over a websocket) is admitted here within the same in-flight and work
// bounds, and gets the same deadline, so that a user cannot pass them by
// sending operations over a socket.
func (g *queryGuard) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	op := graphql.GetOperationContext(ctx)
	if op.Operation == nil || op.Operation.Operation == ast.Subscription {
		return next(ctx)
	}
	release := func() {}
	var deadline time.Time
	if user, ok := auth.UserFrom(ctx); ok && !admitted(ctx) {
		r, err := g.gate.admit(ctx, user.ID)
		if err == nil {
			if err = g.gate.spend(ctx, user.ID, RequestWork); err != nil {
				r()
			}
		}
		if err != nil {
			return graphql.OneShot(&graphql.Response{Errors: gqlerror.List{limitError(err.reason, "%s", err.message)}})
		}
		release, deadline = sync.OnceFunc(r), time.Now().Add(requestTimeout)
	}
	// within gives a context the operation's budget and, for one admitted
	// here, its deadline. (One admitted with its HTTP request has the
	// request's deadline, and ends with it.)
	b := &responseBudget{max: g.limits.MaxResponseBytes}
	within := func(ctx context.Context) (context.Context, context.CancelFunc) {
		ctx = context.WithValue(ctx, budgetKey{}, b)
		if !deadline.IsZero() {
			return context.WithDeadline(withAdmission(ctx), deadline)
		}
		return ctx, func() {}
	}
	ctx, cancel := within(ctx)
	handler := next(ctx)
	// The handler is called until it answers nil; the place is held for its
	// first, whole answer.
	return func(ctx context.Context) *graphql.Response {
		defer release()
		defer cancel()
		ctx, cancelCall := within(ctx)
		defer cancelCall()
		resp := handler(ctx)
		if b.exceeded.Load() && resp != nil {
			return &graphql.Response{Errors: gqlerror.List{limitError("RESPONSE_TOO_LARGE",
				"the answer would hold more than %d bytes; select fewer fields or items", b.max)}}
		}
		return resp
	}
}

// InterceptField charges each result to the operation's budget, and stops
// resolving once it is spent.
func (g *queryGuard) InterceptField(ctx context.Context, next graphql.Resolver) (any, error) {
	b, _ := ctx.Value(budgetKey{}).(*responseBudget)
	if b == nil {
		return next(ctx)
	}
	if b.exceeded.Load() {
		return nil, budgetSpent()
	}
	res, err := next(ctx)
	if b.used.Add(resultBytes(res)) > b.max {
		b.exceeded.Store(true)
		return nil, budgetSpent()
	}
	return res, err
}

func budgetSpent() error {
	return limitError("RESPONSE_TOO_LARGE", "the response budget is spent")
}

// resultBytes estimates the bytes a field's result adds to the answer.
func resultBytes(v any) int64 {
	switch v := v.(type) {
	case models.JSON:
		return int64(len(v)) + 8
	case string:
		return int64(len(v)) + 8
	case *string:
		if v != nil {
			return int64(len(*v)) + 8
		}
	case []string:
		n := int64(8)
		for _, s := range v {
			n += int64(len(s)) + 4
		}
		return n
	}
	return 16
}
