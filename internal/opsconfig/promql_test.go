package opsconfig_test

import (
	"slices"
	"testing"

	"github.com/agentfleet/agentfleet/internal/opsconfig"
)

func TestParseExprValid(t *testing.T) {
	cases := map[string][]string{
		`up`: {"up"},
		`sum by (model) (rate(a_total{model=~"$model", class!="X"}[5m])) / sum by (model) (rate(b_total[5m]))`: {"a_total", "b_total"},
		`sum(rate(a_total[5m])) by (model)`:                                {"a_total"},
		`histogram_quantile(0.99, sum by (le) (rate(h_bucket[5m])))`:       {"h_bucket"},
		`a / on (model) group_left (class) b`:                              {"a", "b"},
		`a > bool 0`:                                                       {"a"},
		`-a + +1 - -2e3 * 0x1f % .5 ^ Inf`:                                 {"a"},
		`max_over_time(rate(a[5m])[1h:1m])`:                                {"a"},
		`a offset 10m unless b offset -5m`:                                 {"a", "b"},
		`a @ end() and b @ 1609746000`:                                     {"a", "b"},
		`time() - timestamp(a)`:                                            {"a"},
		`{__name__="a", job="x",}`:                                         {"a"},
		`topk(5, count_values("v", a))`:                                    {"a"},
		`(sum(increase(a[1h])) or vector(0)) # comment`:                    {"a"},
		`sum without (instance) (a:recorded:rate5m)`:                       {"a:recorded:rate5m"},
		`1 - (sum(increase(a{c=~"A|B"}[6h])) or vector(0))` + "\n/ sum(b)": {"a", "b"},
	}
	for expr, want := range cases {
		e, err := opsconfig.ParseExpr(expr)
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		if got := e.Metrics(); !slices.Equal(got, want) {
			t.Errorf("%s: metrics %v, want %v", expr, got, want)
		}
	}
}

func TestParseExprInvalid(t *testing.T) {
	for _, expr := range []string{
		``, `sum(rate(a[5m])`, `a)`, `sum by model (a)`, `a{class=AUTH}`, `a b`, `nosuchfunc(a)`,
		`a[5]`, `a +`, `a{b~="c"}`, `a offset`, `a[$__rate_interval]`, `a{b="c"`, `rate(a[5m]]`,
		`5m`, `a{b=~"("}`, `(a))`, `sum(a) by`, `a on (x) b`, `rate(, a)`, `a{"b"="c"}`,
		`a == == b`, `{job="x"}`, `a "s"`, `1.2.3`, `a[5m:1m:]`, `by (x) a`, `a[5m] [5m]x`,
	} {
		if _, err := opsconfig.ParseExpr(expr); err == nil {
			t.Errorf("%q accepted", expr)
		}
	}
}

func TestExpandGrafanaVars(t *testing.T) {
	e, err := opsconfig.ParseExpr(opsconfig.ExpandGrafanaVars(`increase(a{m=~"$model"}[$__rate_interval]) / increase(a[${__range}])`))
	if err != nil || len(e.Selectors) != 2 || e.Selectors[0].Matchers[0].Value != "$model" {
		t.Fatalf("got %+v, %v", e, err)
	}
}

func TestValidDuration(t *testing.T) {
	for _, d := range []string{"5m", "1h30m", "7d", "100ms", "1y2w"} {
		if !opsconfig.ValidDuration(d) {
			t.Errorf("%q rejected", d)
		}
	}
	for _, d := range []string{"", "5", "m", "5 m", "1.5h", "30m1h"} {
		if opsconfig.ValidDuration(d) {
			t.Errorf("%q accepted", d)
		}
	}
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"What paged?":               "what-paged",
		"`dlq-replayer stats`":      "dlq-replayer-stats",
		"DLQ growth & replay (3am)": "dlq-growth--replay-3am",
		"UNKNOWN review":            "unknown-review",
	} {
		if got := opsconfig.Slug(in); got != want {
			t.Errorf("Slug(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestParseExprCalls checks each selector's enclosing calls, innermost
// first: the counter check (a counter is used through rate or increase)
// reads them.
func TestParseExprCalls(t *testing.T) {
	cases := map[string][][]string{
		`a`:                                 {nil},
		`sum by (m) (rate(a[5m])) / (b)`:    {{"rate", "sum"}, nil},
		`max_over_time(rate(a[5m])[1h:1m])`: {{"rate", "max_over_time"}},
		`histogram_quantile(0.9, sum(rate(h[5m])))`:              {{"rate", "sum", "histogram_quantile"}},
		`a unless last_over_time({__name__="a"}[1h] offset 10m)`: {nil, {"last_over_time"}},
		`sum((a))`: {{"sum"}},
	}
	for expr, want := range cases {
		e, err := opsconfig.ParseExpr(expr)
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		if len(e.Selectors) != len(want) {
			t.Errorf("%s: %d selectors, want %d", expr, len(e.Selectors), len(want))
			continue
		}
		for i, s := range e.Selectors {
			if !slices.Equal(s.Calls, want[i]) {
				t.Errorf("%s: selector %d (%s) calls %v, want %v", expr, i, s.Name, s.Calls, want[i])
			}
		}
	}
}
