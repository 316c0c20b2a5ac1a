package idempotencytest

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// bigID is 2^53 + 1: the first integer a float64 cannot hold (it rounds
// to 9007199254740992).
const bigID int64 = 9007199254740993

// testWrapperReplaysBigIntegers: a replay from the stored record (a
// redelivery, a crash, a DLQ replay), through this store and through a
// reopened one, gives the model the numbers the first run gave it: an
// integer above 2^53 from a Go int64, from a typed tool's json.Number
// (tool.ToMap), nested in objects and arrays, and in a state change the
// tool recorded. A record decoded through float64 replayed
// 9007199254740992 (left open in the twenty-second session).
func testWrapperReplaysBigIntegers(t *testing.T, f Factory) {
	inst := f.New(t, 0)
	inv := newID("inv")
	tl := newTool("refund", func(ctx context.Context, args map[string]any) (map[string]any, error) {
		tool.FromContext(ctx).SetState("last_order_id", bigID)
		return tool.OK(map[string]any{
			"order_id":  bigID,
			"refund_id": json.Number("12345678901234567890"),
			"lines":     []any{map[string]any{"sku": json.Number("9007199254740995"), "cents": 1250}},
			"ratio":     0.1,
		}), nil
	})
	args := map[string]any{"order_id": "A-1042", "amount_cents": 1250}
	run := func(s idempotency.Store) (map[string]any, session.Actions) {
		t.Helper()
		ctx := ctxFor(t, inv)
		res, err := idempotency.Wrap(tl, s, wrapOpts(idempotency.Options{})).Run(ctx, args)
		if err != nil {
			t.Fatal(err)
		}
		return res, tool.FromContext(ctx).Actions()
	}
	exact := func(name string, res map[string]any, acts session.Actions) {
		t.Helper()
		for _, c := range []struct {
			what string
			got  any
			want string
		}{
			{"order_id", res["order_id"], "9007199254740993"},
			{"refund_id", res["refund_id"], "12345678901234567890"},
			{"lines[0].sku", digInto(res, "lines", 0, "sku"), "9007199254740995"},
			{"the state change", acts.StateDelta["last_order_id"], "9007199254740993"},
		} {
			if got := jsonText(t, c.got); got != c.want {
				t.Errorf("%s: %s = %s (%T), want %s", name, c.what, got, c.got, c.want)
			}
		}
	}
	first, firstActs := run(inst.Store)
	exact("the first run", first, firstActs)
	stores := map[string]idempotency.Store{"the same store": inst.Store}
	if inst.Reopen != nil {
		stores["a reopened store"] = inst.Reopen(t)
	}
	for name, s := range stores {
		replayed, acts := run(s)
		if n := tl.runs.Load(); n != 1 {
			t.Fatalf("%s: the tool ran %d times, want once", name, n)
		}
		exact("a replay from "+name, replayed, acts)
		if !reflect.DeepEqual(first, replayed) {
			t.Errorf("%s: the first run gave %#v, the replay %#v", name, first, replayed)
		}
	}
}

// digInto returns the value at path (map keys and slice indexes) in v, nil
// when the path is not there.
func digInto(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			s, _ := v.([]any)
			if k >= len(s) {
				return nil
			}
			v = s[k]
		}
	}
	return v
}

// jsonText returns v as JSON text.
func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %#v: %v", v, err)
	}
	return string(b)
}
