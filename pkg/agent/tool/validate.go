package tool

import (
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// Validator checks function-call arguments against tool declarations. It
// resolves each schema once. The zero value is ready to use and safe for
// concurrent use.
type Validator struct {
	cache sync.Map // *jsonschema.Schema -> *jsonschema.Resolved or error
}

type resolved struct {
	r   *jsonschema.Resolved
	err error
}

// Validate returns an *ArgumentError when args do not fit decl's Parameters
// (missing required fields, wrong types, unknown fields where the schema
// forbids them). A declaration without parameters accepts any arguments.
func (v *Validator) Validate(decl *model.ToolDeclaration, args map[string]any) error {
	if decl == nil || decl.Parameters == nil {
		return nil
	}
	var res resolved
	if c, ok := v.cache.Load(decl.Parameters); ok {
		res = c.(resolved)
	} else {
		r, err := decl.Parameters.Resolve(nil)
		res = resolved{r: r, err: err}
		v.cache.Store(decl.Parameters, res)
	}
	if res.err != nil {
		// A broken schema is the tool author's bug; don't block the call on it.
		return nil
	}
	instance := args
	if instance == nil {
		instance = map[string]any{}
	}
	if err := res.r.Validate(instance); err != nil {
		return &ArgumentError{Tool: decl.Name, Detail: SanitizeString(err.Error())}
	}
	return nil
}
