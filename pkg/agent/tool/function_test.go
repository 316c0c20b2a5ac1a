package tool_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

type lookupArgs struct {
	OrderID string `json:"order_id" jsonschema:"the order id"`
	Verbose bool   `json:"verbose,omitempty"`
}

type lookupResult struct {
	Status string `json:"status"`
	ID     string `json:"id"`
}

func TestNewFuncSchemaAndRun(t *testing.T) {
	f, err := tool.NewFunc("lookup", "Look up", func(ctx context.Context, a lookupArgs) (lookupResult, error) {
		if tc := tool.FromContext(ctx); tc == nil || tc.InvocationID != "inv" {
			return lookupResult{}, errors.New("no tool context")
		}
		return lookupResult{Status: "ok", ID: a.OrderID}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	d := f.Declaration()
	if d.Name != "lookup" || d.Parameters == nil || len(d.Parameters.Required) != 1 || d.Parameters.Required[0] != "order_id" {
		t.Fatalf("declaration = %+v", d.Parameters)
	}
	if d.Parameters.Properties["order_id"].Description != "the order id" {
		t.Fatal("description tag not used")
	}
	ctx := tool.WithContext(context.Background(), &tool.Context{InvocationID: "inv"})
	out, err := f.Run(ctx, map[string]any{"order_id": "A-1"})
	if err != nil || out["status"] != "ok" || out["id"] != "A-1" {
		t.Fatalf("Run = %v, %v", out, err)
	}
	_, err = f.Run(ctx, map[string]any{"order_id": "A-1", "bogus": 1})
	if !errors.Is(err, tool.ErrInvalidArguments) {
		t.Fatalf("unknown field error = %v", err)
	}
}

func TestValidatorRejectsWrongTypesAndMissingFields(t *testing.T) {
	f := tool.MustFunc("lookup", "", func(context.Context, lookupArgs) (map[string]any, error) { return nil, nil })
	var v tool.Validator
	for _, args := range []map[string]any{nil, {"order_id": 7.0}, {"verbose": true}} {
		if err := v.Validate(f.Declaration(), args); !errors.Is(err, tool.ErrInvalidArguments) {
			t.Fatalf("Validate(%v) = %v, want ErrInvalidArguments", args, err)
		}
	}
	if err := v.Validate(f.Declaration(), map[string]any{"order_id": "A-1", "verbose": true}); err != nil {
		t.Fatalf("valid args rejected: %v", err)
	}
}
