package model_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

func TestAggregator(t *testing.T) {
	var a model.Aggregator
	p1 := a.Add(&model.Response{Content: model.NewTextContent(model.RoleModel, "Hel")})
	p2 := a.Add(&model.Response{Content: model.NewTextContent(model.RoleModel, "lo")})
	call := &model.FunctionCall{Name: "get_order", Args: map[string]any{"order_id": "A-1"}}
	p3 := a.Add(&model.Response{Content: &model.Content{Role: model.RoleModel, Parts: []*model.Part{{FunctionCall: call}}},
		FinishReason: model.FinishReasonStop, Usage: &model.Usage{TotalTokens: 9}})
	if p1 == nil || !p1.Partial || p1.Content.Text() != "Hel" || p2.Content.Text() != "lo" || p3 != nil {
		t.Fatalf("partials = %+v %+v %+v", p1, p2, p3)
	}
	if !a.Emitted() || a.PartialText() != "Hello" {
		t.Fatalf("emitted=%v text=%q", a.Emitted(), a.PartialText())
	}
	f := a.Final()
	if f.Partial || !f.TurnComplete || f.FinishReason != model.FinishReasonStop || f.Usage.TotalTokens != 9 {
		t.Fatalf("final = %+v", f)
	}
	if f.Content.Text() != "Hello" || len(f.FunctionCalls()) != 1 || f.Content.Parts[0].Text != "Hello" {
		t.Fatalf("final content = %+v", f.Content)
	}
}

func TestAggregatorEmptyStream(t *testing.T) {
	var a model.Aggregator
	if a.Final() != nil {
		t.Fatal("Final without chunks should be nil")
	}
	a.Add(&model.Response{FinishReason: model.FinishReasonSafety, ErrorCode: model.FinishReasonSafety})
	f := a.Final()
	if f.Content != nil || f.ErrorCode != model.FinishReasonSafety || a.Emitted() {
		t.Fatalf("final = %+v", f)
	}
}

func TestCallBudget(t *testing.T) {
	b := model.NewCallBudget(3)
	for i := range 3 {
		if err := b.Charge(); err != nil {
			t.Fatalf("charge %d: %v", i+1, err)
		}
	}
	err := b.Charge()
	var be *model.CallBudgetError
	if !errors.As(err, &be) || !errors.Is(err, model.ErrCallBudgetExceeded) || be.Attempted != 4 || be.Limit != 3 {
		t.Fatalf("4th charge = %v", err)
	}
	if b.Used() != 3 {
		t.Fatalf("refused charge was counted: used %d", b.Used())
	}
	unlimited := model.NewCallBudget(-1)
	for range 1000 {
		if err := unlimited.Charge(); err != nil {
			t.Fatal(err)
		}
	}
	var nilBudget *model.CallBudget
	if nilBudget.Charge() != nil || nilBudget.Used() != 0 {
		t.Fatal("nil budget must be a no-op")
	}
}

func TestCallBudgetConcurrent(t *testing.T) {
	b := model.NewCallBudget(50)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if b.Charge() == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if ok != 50 || b.Used() != 50 {
		t.Fatalf("granted %d charges (used %d), want exactly 50", ok, b.Used())
	}
}

func TestBudgetInContext(t *testing.T) {
	b := model.NewCallBudget(1)
	ctx := model.WithCallBudget(context.Background(), b)
	if model.CallBudgetFrom(ctx) != b || model.CallBudgetFrom(context.Background()) != nil {
		t.Fatal("budget not carried by the context")
	}
}

func TestFinishReasonKeepsUnknownValues(t *testing.T) {
	r := model.FinishReason("SOMETHING_NEW")
	if r.Known() || string(r) != "SOMETHING_NEW" || !model.FinishReasonSafety.Known() {
		t.Fatal("Known()")
	}
}

func TestProviderErrorUnwrap(t *testing.T) {
	inner := errors.New("reset")
	err := error(&model.ProviderError{Provider: "sim", StatusCode: 503, Status: "UNAVAILABLE", Err: inner})
	var sc interface{ HTTPStatusCode() int }
	if !errors.Is(err, inner) || !errors.As(err, &sc) || sc.HTTPStatusCode() != 503 {
		t.Fatalf("ProviderError = %v", err)
	}
}

// HasFunctionCalls and HasFunctionResponses agree with the slices they
// stand for, on nil, empty, mixed and nil-part contents.
func TestHasFunctionCallsAgreesWithFunctionCalls(t *testing.T) {
	call := &model.Part{FunctionCall: &model.FunctionCall{Name: "get_order"}}
	resp := &model.Part{FunctionResponse: &model.FunctionResponse{Name: "get_order"}}
	for _, c := range []*model.Content{
		nil, {}, model.NewTextContent(model.RoleModel, "hi"),
		{Parts: []*model.Part{nil, call}}, {Parts: []*model.Part{resp}}, {Parts: []*model.Part{{Text: "x"}, call, resp}},
	} {
		if c.HasFunctionCalls() != (len(c.FunctionCalls()) > 0) || c.HasFunctionResponses() != (len(c.FunctionResponses()) > 0) {
			t.Errorf("%+v: Has* = %v/%v, slices %d/%d", c, c.HasFunctionCalls(), c.HasFunctionResponses(), len(c.FunctionCalls()), len(c.FunctionResponses()))
		}
	}
}

// A thought signature survives aggregation: on a text chunk it belongs to
// the text part the chunks make up, and on an empty part at the end of the
// stream to the text before it (or, with none, to the call before it).
func TestAggregatorKeepsThoughtSignatures(t *testing.T) {
	text := func(s string, sig string) *model.Part { return &model.Part{Text: s, ThoughtSignature: []byte(sig)} }
	chunk := func(parts ...*model.Part) *model.Response {
		return &model.Response{Content: &model.Content{Role: model.RoleModel, Parts: parts}}
	}
	var a model.Aggregator
	a.Add(chunk(text("Refund", "")))
	a.Add(chunk(text("ed.", ""), text("", "sig-1")))
	final := a.Final()
	if len(final.Content.Parts) != 1 || final.Content.Text() != "Refunded." || string(final.Content.Parts[0].ThoughtSignature) != "sig-1" {
		t.Fatalf("final parts %+v, want one text part signed sig-1", final.Content.Parts)
	}
	var b model.Aggregator
	call := &model.Part{FunctionCall: &model.FunctionCall{Name: "get_order"}}
	b.Add(chunk(call))
	b.Add(chunk(text("", "sig-2")))
	final = b.Final()
	if len(final.Content.Parts) != 1 || string(final.Content.Parts[0].ThoughtSignature) != "sig-2" {
		t.Fatalf("final parts %+v, want the call signed sig-2", final.Content.Parts)
	}
}
