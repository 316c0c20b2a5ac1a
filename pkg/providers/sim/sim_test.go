package sim

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

func newSim(t *testing.T, cfg Config) *Model {
	t.Helper()
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

func call(t *testing.T, m *Model, req *model.Request, stream bool) ([]*model.Response, error) {
	t.Helper()
	var out []*model.Response
	for r, err := range m.GenerateContent(context.Background(), req, stream) {
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

func final(t *testing.T, m *Model, req *model.Request) *model.Response {
	t.Helper()
	rs, err := call(t, m, req, false)
	if err != nil || len(rs) != 1 {
		t.Fatalf("call: %d responses, err %v", len(rs), err)
	}
	return rs[0]
}

func user(text string) *model.Content { return model.NewTextContent(model.RoleUser, text) }

func modelCalls(fcs ...*model.FunctionCall) *model.Content {
	c := &model.Content{Role: model.RoleModel}
	for _, fc := range fcs {
		c.Parts = append(c.Parts, &model.Part{FunctionCall: fc})
	}
	return c
}

func toolResult(id, name string, resp map[string]any) *model.Content {
	return &model.Content{Role: model.RoleUser, Parts: []*model.Part{{FunctionResponse: &model.FunctionResponse{ID: id, Name: name, Response: resp}}}}
}

// jsonRoundTrip turns Go ints into float64, as a stored session would.
func jsonRoundTrip(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	raw, _ := json.Marshal(m)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestScriptDrivesRefund runs the conversation the way the agent loop
// would: feed each function call's result back and expect the next step.
func TestScriptDrivesRefund(t *testing.T) {
	m := newSim(t, Config{Seed: 1})
	if m.Name() != "sim:order-support" || !m.Simulated() {
		t.Fatalf("Name() = %q", m.Name())
	}
	conv := []*model.Content{user("Please refund my order A-1042, it arrived broken.")}

	r := final(t, m, &model.Request{Contents: conv})
	fcs := r.FunctionCalls()
	if len(fcs) != 1 || fcs[0].Name != ToolGetOrder || fcs[0].Args["order_id"] != "A-1042" || fcs[0].ID != "" {
		t.Fatalf("step 1 = %+v", fcs)
	}
	if r.FinishReason != model.FinishReasonStop || !r.TurnComplete || r.ProviderRequestID != "sim-1" || r.ModelVersion != "sim:order-support" || r.Usage == nil {
		t.Errorf("step 1 response = %+v", r)
	}
	fcs[0].ID = "loop-1" // the agent loop assigns ids
	conv = append(conv, r.Content, toolResult("loop-1", ToolGetOrder, jsonRoundTrip(t, tool.OK(map[string]any{"order_id": "A-1042", "amount_cents": 1299}))))

	r = final(t, m, &model.Request{Contents: conv})
	fcs = r.FunctionCalls()
	if len(fcs) != 1 || fcs[0].Name != ToolRefundOrder {
		t.Fatalf("step 2 = %+v", r.Content)
	}
	want := map[string]any{"order_id": "A-1042", "amount_cents": int64(1299), "reason": "customer request"}
	if !reflect.DeepEqual(fcs[0].Args, want) {
		t.Errorf("refund args = %#v, want %#v", fcs[0].Args, want)
	}
	fcs[0].ID = "loop-2"
	conv = append(conv, r.Content, toolResult("loop-2", ToolRefundOrder, tool.OK(map[string]any{"refund_id": "R-1"})))

	r = final(t, m, &model.Request{Contents: conv})
	if got := r.Content.Text(); got != "Refunded 1299 cents for order A-1042." || len(r.FunctionCalls()) != 0 {
		t.Fatalf("step 3 = %q %+v", got, r.Content)
	}
	st := m.Stats()
	if st.Calls != 3 || st.FunctionCalls != 2 || st.FinalAnswers != 1 || len(st.Faults) != 0 {
		t.Errorf("stats = %+v", st)
	}
}

func TestScriptVariants(t *testing.T) {
	m := newSim(t, Config{DefaultOrderID: "A-9"})
	getCall := &model.FunctionCall{Name: ToolGetOrder, Args: map[string]any{"order_id": "B-777"}}
	cases := []struct {
		name     string
		conv     []*model.Content
		wantText string
		wantCall string
		wantArgs map[string]any
	}{
		{name: "no order id uses the default", conv: []*model.Content{user("refund please")}, wantCall: ToolGetOrder, wantArgs: map[string]any{"order_id": "A-9"}},
		{name: "empty conversation", wantText: "How can I help you with your order?"},
		{name: "total_cents under order, id from the call",
			conv:     []*model.Content{user("refund B-777"), modelCalls(getCall), toolResult("", ToolGetOrder, map[string]any{"status": "ok", "order": map[string]any{"total_cents": "2500"}})},
			wantCall: ToolRefundOrder, wantArgs: map[string]any{"order_id": "B-777", "amount_cents": int64(2500), "reason": "customer request"}},
		{name: "no amount",
			conv:     []*model.Content{user("refund B-777"), modelCalls(getCall), toolResult("", ToolGetOrder, map[string]any{"status": "ok"})},
			wantText: "I found order B-777 but could not tell its amount, so I did not refund it."},
		{name: "not retryable error is explained",
			conv:     []*model.Content{user("refund B-777"), modelCalls(getCall), toolResult("", ToolGetOrder, tool.Error("not_found", false, "no such order"))},
			wantText: "Sorry, I could not complete your request: get_order failed (not_found)."},
		{name: "retryable error is retried once",
			conv:     []*model.Content{user("refund B-777"), modelCalls(getCall), toolResult("", ToolGetOrder, tool.Error("timeout", true, ""))},
			wantCall: ToolGetOrder, wantArgs: map[string]any{"order_id": "B-777"}},
		{name: "second retryable error is final",
			conv: []*model.Content{user("refund B-777"), modelCalls(getCall), toolResult("", ToolGetOrder, tool.Error("timeout", true, "")),
				modelCalls(getCall), toolResult("", ToolGetOrder, tool.Error("timeout", true, ""))},
			wantText: "Sorry, I could not complete your request: get_order failed (timeout)."},
		{name: "refund error map",
			conv: []*model.Content{user("refund B-777"), modelCalls(&model.FunctionCall{Name: ToolRefundOrder, Args: map[string]any{"order_id": "B-777", "amount_cents": 5}}),
				toolResult("", ToolRefundOrder, tool.NotFound("order gone"))},
			wantText: "Sorry, I could not complete your request: refund_order failed (not_found)."},
		{name: "refund amount from the call",
			conv: []*model.Content{user("refund B-777"), modelCalls(&model.FunctionCall{ID: "x", Name: ToolRefundOrder, Args: map[string]any{"order_id": "B-777", "amount_cents": float64(5)}}),
				toolResult("x", ToolRefundOrder, tool.OK(nil))},
			wantText: "Refunded 5 cents for order B-777."},
		{name: "unknown tool",
			conv:     []*model.Content{user("hi"), modelCalls(&model.FunctionCall{Name: "weather"}), toolResult("", "weather", map[string]any{"temp": 3})},
			wantText: "I got a result from weather, but I don't know what to do with it."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := final(t, m, &model.Request{Contents: tc.conv})
			if tc.wantText != "" && r.Content.Text() != tc.wantText {
				t.Errorf("text = %q, want %q", r.Content.Text(), tc.wantText)
			}
			fcs := r.FunctionCalls()
			if tc.wantCall == "" {
				if len(fcs) != 0 {
					t.Errorf("unexpected calls %+v", fcs)
				}
				return
			}
			if len(fcs) != 1 || fcs[0].Name != tc.wantCall || !reflect.DeepEqual(fcs[0].Args, tc.wantArgs) {
				t.Errorf("calls = %+v, want %s %#v", fcs, tc.wantCall, tc.wantArgs)
			}
		})
	}
}

func TestFaultsAtProbabilityOne(t *testing.T) {
	req := &model.Request{Contents: []*model.Content{user("refund A-1042")}}
	thrown := map[FaultClass]struct {
		status int
		check  func(t *testing.T, pe *model.ProviderError, err error)
	}{
		FaultRateLimited: {429, func(t *testing.T, pe *model.ProviderError, _ error) {
			if pe.Status != "RESOURCE_EXHAUSTED" || pe.RetryAfter != 3*time.Second || pe.QuotaExhausted {
				t.Errorf("%+v", pe)
			}
		}},
		FaultQuota: {429, func(t *testing.T, pe *model.ProviderError, _ error) {
			if pe.Status != "RESOURCE_EXHAUSTED" || !pe.QuotaExhausted {
				t.Errorf("%+v", pe)
			}
		}},
		FaultServer: {503, func(t *testing.T, pe *model.ProviderError, _ error) {
			if pe.Status != "UNAVAILABLE" {
				t.Errorf("%+v", pe)
			}
		}},
		FaultTimeout: {0, func(t *testing.T, _ *model.ProviderError, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("not a deadline: %v", err)
			}
		}},
		FaultTransport: {0, func(t *testing.T, _ *model.ProviderError, err error) {
			if !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("not a transport error: %v", err)
			}
		}},
	}
	for class, want := range thrown {
		for _, stream := range []bool{false, true} {
			m := newSim(t, Config{Faults: Faults{class: 1}, RetryAfter: 3 * time.Second})
			for i := 0; i < 4; i++ {
				_, err := call(t, m, req, stream)
				var pe *model.ProviderError
				if !errors.As(err, &pe) {
					t.Fatalf("%s: err = %v, want *model.ProviderError", class, err)
				}
				if pe.Provider != ProviderName || pe.StatusCode != want.status || !errors.Is(err, ErrSimulated) {
					t.Errorf("%s: %+v", class, pe)
				}
				want.check(t, pe, err)
			}
			if st := m.Stats(); st.Faults[class] != 4 || st.Calls != 4 || st.FunctionCalls != 0 {
				t.Errorf("%s: stats %+v", class, st)
			}
		}
	}

	inBand := map[FaultClass]func(t *testing.T, r *model.Response){
		FaultOutputBlocked: func(t *testing.T, r *model.Response) {
			if r.FinishReason != model.FinishReasonSafety || r.ErrorCode != model.FinishReasonSafety || r.Content != nil {
				t.Errorf("%+v", r)
			}
		},
		FaultTruncated: func(t *testing.T, r *model.Response) {
			if r.FinishReason != model.FinishReasonMaxTokens || r.ErrorCode != "" || r.Content.Text() == "" || len(r.FunctionCalls()) != 0 {
				t.Errorf("%+v", r)
			}
		},
		FaultMalformedFunctionCall: func(t *testing.T, r *model.Response) {
			if r.FinishReason != model.FinishReasonMalformedFunctionCall || r.ErrorCode != model.FinishReasonMalformedFunctionCall || r.Content != nil || r.ErrorMessage == "" {
				t.Errorf("%+v", r)
			}
		},
	}
	for class, check := range inBand {
		for _, stream := range []bool{false, true} {
			m := newSim(t, Config{Faults: Faults{class: 1}})
			rs, err := call(t, m, req, stream)
			if err != nil || len(rs) == 0 {
				t.Fatalf("%s: in-band fault thrown: %v", class, err)
			}
			last := rs[len(rs)-1]
			if last.Partial || !last.TurnComplete {
				t.Errorf("%s: last = %+v", class, last)
			}
			check(t, last)
			if m.Stats().Faults[class] != 1 {
				t.Errorf("%s: stats %+v", class, m.Stats())
			}
		}
	}
}

func TestStreamingPartials(t *testing.T) {
	m := newSim(t, Config{})
	conv := []*model.Content{user("refund A-1"), modelCalls(&model.FunctionCall{Name: ToolRefundOrder, Args: map[string]any{"order_id": "A-1", "amount_cents": 10}}),
		toolResult("", ToolRefundOrder, tool.OK(nil))}
	rs, err := call(t, m, &model.Request{Contents: conv}, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 || !rs[0].Partial || !rs[1].Partial || rs[2].Partial {
		t.Fatalf("responses = %+v", rs)
	}
	if rs[0].Content.Text()+rs[1].Content.Text() != rs[2].Content.Text() || rs[2].Content.Text() != "Refunded 10 cents for order A-1." {
		t.Errorf("chunks %q + %q != %q", rs[0].Content.Text(), rs[1].Content.Text(), rs[2].Content.Text())
	}
	if m.Stats().StreamCalls != 1 {
		t.Errorf("stats %+v", m.Stats())
	}

	// A transport fault in a stream drops it after the first chunk.
	m = newSim(t, Config{Faults: Faults{FaultTransport: 1}})
	rs, err = call(t, m, &model.Request{Contents: conv}, true)
	if err == nil || len(rs) != 1 || !rs[0].Partial {
		t.Fatalf("dropped stream: %+v %v", rs, err)
	}
}

func sequence(t *testing.T, seed uint64, n int) []string {
	t.Helper()
	faults, err := ParseFaults("rate_limited=0.2,server=0.2,output_blocked=0.1,truncated=0.1")
	if err != nil {
		t.Fatal(err)
	}
	m := newSim(t, Config{Seed: seed, Faults: faults, Jitter: time.Microsecond})
	req := &model.Request{Contents: []*model.Content{user("refund A-1042")}}
	var out []string
	for i := 0; i < n; i++ {
		rs, err := call(t, m, req, false)
		var pe *model.ProviderError
		switch {
		case errors.As(err, &pe):
			out = append(out, pe.Status)
		case err != nil:
			t.Fatal(err)
		default:
			out = append(out, string(rs[0].FinishReason))
		}
	}
	return out
}

func TestSeedIsReproducible(t *testing.T) {
	a, b := sequence(t, 42, 200), sequence(t, 42, 200)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("same seed, different sequences:\n%v\n%v", a, b)
	}
	if reflect.DeepEqual(a, sequence(t, 43, 200)) {
		t.Fatal("different seeds gave the same 200-call sequence")
	}
	counts := map[string]int{}
	for _, s := range a {
		counts[s]++
	}
	// 200 draws at 0.4/0.1/0.1/0.4: every outcome shows up.
	for _, s := range []string{"RESOURCE_EXHAUSTED", "UNAVAILABLE", "SAFETY", "MAX_TOKENS", "STOP"} {
		if counts[s] == 0 {
			t.Errorf("outcome %s never drawn: %v", s, counts)
		}
	}
}

func TestLatencyHonoursContext(t *testing.T) {
	m := newSim(t, Config{Latency: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	var gotErr error
	for _, err := range m.GenerateContent(ctx, &model.Request{}, false) {
		gotErr = err
	}
	if !errors.Is(gotErr, context.DeadlineExceeded) {
		t.Fatalf("err = %v", gotErr)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("latency did not stop at ctx deadline")
	}
	var pe *model.ProviderError
	if errors.As(gotErr, &pe) {
		t.Error("the caller's own deadline is not a provider fault")
	}

	m = newSim(t, Config{Latency: 30 * time.Millisecond})
	start = time.Now()
	if _, err := call(t, m, &model.Request{}, false); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("latency not applied: %v", d)
	}
}

func TestConcurrentUse(t *testing.T) {
	m := newSim(t, Config{Seed: 7, Faults: Faults{FaultServer: 0.5}})
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				_, _ = call(t, m, &model.Request{Contents: []*model.Content{user("refund A-1")}}, j%2 == 0)
			}
		}()
	}
	wg.Wait()
	st := m.Stats()
	if st.Calls != 400 || st.Faults[FaultServer]+st.FunctionCalls != 400 {
		t.Errorf("stats = %+v", st)
	}
}

func TestParseFaults(t *testing.T) {
	f, err := ParseFaults(" rate_limited=0.2, server=0.2 ,malformed_function_call=0.05")
	if err != nil {
		t.Fatal(err)
	}
	if want := (Faults{FaultRateLimited: 0.2, FaultServer: 0.2, FaultMalformedFunctionCall: 0.05}); !reflect.DeepEqual(f, want) {
		t.Errorf("got %v", f)
	}
	if s := f.String(); s != "rate_limited=0.2,server=0.2,malformed_function_call=0.05" {
		t.Errorf("String() = %q", s)
	}
	if g, err := ParseFaults(f.String()); err != nil || !reflect.DeepEqual(g, f) {
		t.Errorf("round trip: %v %v", g, err)
	}
	for _, s := range []string{"", "none"} {
		if f, err := ParseFaults(s); err != nil || len(f) != 0 {
			t.Errorf("%q: %v %v", s, f, err)
		}
	}
	for _, bad := range []string{"bogus=0.1", "server", "server=x", "server=1.5", "server=-0.1", "server=0.6,quota=0.6", "server=0.1,server=0.2", "server=NaN"} {
		if _, err := ParseFaults(bad); err == nil {
			t.Errorf("ParseFaults(%q) = nil error", bad)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for name, c := range map[string]Config{
		"negative latency": {Latency: -1},
		"bad fault":        {Faults: Faults{"nope": 0.1}},
		"sum above one":    {Faults: Faults{FaultServer: 0.7, FaultQuota: 0.7}},
		"space in name":    {Name: "a b"},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("%s: New() = nil error", name)
		}
	}
	if len(FaultClasses) != len((&Model{}).faults) {
		t.Fatalf("counter array has %d slots for %d classes", len((&Model{}).faults), len(FaultClasses))
	}
}

func TestCents(t *testing.T) {
	for v, want := range map[any]int64{1299: 1299, int64(5): 5, float64(7): 7, "42": 42, json.Number("9"): 9} {
		if got, ok := cents(v); !ok || got != want {
			t.Errorf("cents(%#v) = %d %v", v, got, ok)
		}
	}
	for _, v := range []any{-1, 1.5, "x", nil, true, float64(-3)} {
		if _, ok := cents(v); ok {
			t.Errorf("cents(%#v) ok", v)
		}
	}
}
