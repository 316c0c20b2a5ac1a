package tool

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// MaxCachedSchemas bounds a Validator's cache of resolved schemas. The cache
// is keyed by the *jsonschema.Schema pointer, so a tool should return the
// same declaration every time (Func and the idempotency wrapper do); one
// that builds it per call gets it resolved per call once the cache is full,
// instead of growing the cache for the life of the process.
const MaxCachedSchemas = 256

// Validator checks function-call arguments against tool declarations. It
// resolves each schema once (up to MaxCachedSchemas of them). The zero
// value is ready to use and safe for concurrent use.
type Validator struct {
	cache sync.Map // *jsonschema.Schema -> resolved
	n     atomic.Int64
}

type resolved struct {
	r   *jsonschema.Resolved
	err error
	// simple is the schema's fast check when it has the plain shape of a
	// struct's (compileSimple), else nil.
	simple *simpleSchema
}

// SchemaError reports a tool declaration whose parameter schema does not
// resolve (a pattern Go's regexp refuses, a $ref to nothing): the tool
// author's bug, which no argument can satisfy. It is not an ArgumentError:
// the agent loop ends the invocation with it rather than asking the model
// to fix its arguments, and a worker refuses to start with such a tool.
type SchemaError struct {
	Tool string // Tool is the tool's name.
	Err  error  // Err is the resolver's error.
}

// Error implements error.
func (e *SchemaError) Error() string {
	return fmt.Sprintf("tool %s: its parameter schema does not resolve: %v", e.Tool, e.Err)
}

// Unwrap returns the resolver's error.
func (e *SchemaError) Unwrap() error { return e.Err }

// Check returns a *SchemaError when decl's Parameters do not resolve, and
// nil for a declaration without parameters.
func (v *Validator) Check(decl *model.ToolDeclaration) error {
	if decl == nil || decl.Parameters == nil {
		return nil
	}
	if res := v.resolve(decl.Parameters); res.err != nil {
		return &SchemaError{Tool: decl.Name, Err: res.err}
	}
	return nil
}

// resolve returns the schema resolved, from the cache when it is there.
func (v *Validator) resolve(s *jsonschema.Schema) resolved {
	if c, ok := v.cache.Load(s); ok {
		return c.(resolved)
	}
	r, err := s.Resolve(nil)
	if err == nil {
		err = sameInstanceCycle(s)
	}
	res := resolved{r: r, err: err}
	if err == nil {
		res.simple = compileSimple(s)
	}
	if v.n.Load() < MaxCachedSchemas {
		if _, loaded := v.cache.LoadOrStore(s, res); !loaded {
			v.n.Add(1)
		}
	}
	return res
}

// Validate returns an *ArgumentError when args do not fit decl's Parameters
// (missing required fields, wrong types, unknown fields where the schema
// forbids them), and a *SchemaError when the schema itself does not
// resolve (no call of the tool can be checked, so none is let through). A
// declaration without parameters accepts any arguments.
func (v *Validator) Validate(decl *model.ToolDeclaration, args map[string]any) error {
	if decl == nil || decl.Parameters == nil {
		return nil
	}
	res := v.resolve(decl.Parameters)
	if res.err != nil {
		return &SchemaError{Tool: decl.Name, Err: res.err}
	}
	instance := args
	if instance == nil {
		instance = map[string]any{}
	}
	if res.simple != nil && res.simple.accepts(instance) {
		return nil
	}
	if err := res.r.Validate(instance); err != nil {
		return &ArgumentError{Tool: decl.Name, Detail: SanitizeString(nameArguments(err.Error()))}
	}
	return nil
}

// schemaPointerRE: the JSON pointer jsonschema-go names an argument by
// ("validating /properties/note: type: …").
var schemaPointerRE = regexp.MustCompile(`validating (/[^\s:]+)`)

// nameArguments rewrites the schema pointers in a validation error as
// argument names ("validating argument note"), which the model can act
// on; left as they are they look like file paths and are redacted.
func nameArguments(msg string) string {
	return schemaPointerRE.ReplaceAllStringFunc(msg, func(m string) string {
		var names []string
		for _, seg := range strings.Split(strings.TrimPrefix(m, "validating /"), "/") {
			if seg != "properties" && seg != "" {
				names = append(names, seg)
			}
		}
		return "validating argument " + strings.Join(names, ".")
	})
}
