package opsconfig_test

import (
	"reflect"
	"testing"

	"github.com/agentfleet/agentfleet/internal/opsconfig"
)

// FuzzParseExpr: the PromQL checker's hand-written lexer and parser never
// panic or hang on any text (a dashboard or an alert rule being edited);
// an expression it accepts is accepted the same with white space and a
// comment around it and in parentheses (closed on a new line: a
// comment runs to the end of its line), with the same selectors, labels
// and calls; Grafana's interval expansion is idempotent.
func FuzzParseExpr(f *testing.F) {
	for _, s := range []string{
		`up`, `sum by (model) (rate(a_total{model=~"$model", class!="X"}[5m])) / sum by (model) (rate(b_total[5m]))`,
		`sum(rate(a_total[5m])) by (model)`, `histogram_quantile(0.99, sum by (le) (rate(h_bucket[5m])))`,
		`a / on (model) group_left (class) b`, `a > bool 0`, `-a + +1 - -2e3 * 0x1f % .5 ^ Inf`,
		`max_over_time(rate(a[5m])[1h:1m])`, `a offset 10m unless b offset -5m`, `a @ end() and b @ 1609746000`,
		`time() - timestamp(a)`, `{__name__="a", job="x",}`, `topk(5, count_values("v", a))`,
		`(sum(increase(a[1h])) or vector(0)) # comment`, `sum without (instance) (a:recorded:rate5m)`,
		`a{b=~"("}`, `a{b="c\"d\\"}`, `a{b='c'}`, "a{b=`c`}", `rate(a[$__rate_interval])`, `a[5m:1m:]`,
		`((((((((((a))))))))))`, `1.2.3`, `a{`, `"unterminated`, `sum(`, `a @`, `-`, `a[1y2w3d4h5m6s7ms]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if x := opsconfig.ExpandGrafanaVars(s); opsconfig.ExpandGrafanaVars(x) != x {
			t.Fatalf("ExpandGrafanaVars not idempotent on %q", s)
		}
		e, err := opsconfig.ParseExpr(s)
		if err != nil {
			if e != nil {
				t.Fatalf("expression and error for %q", s)
			}
			return
		}
		for _, v := range []string{" \t" + s + "\n", "(" + s + "\n)", s + " # note"} {
			e2, err := opsconfig.ParseExpr(v)
			if err != nil {
				t.Fatalf("ParseExpr(%q) ok, ParseExpr(%q): %v", s, v, err)
			}
			if !reflect.DeepEqual(e, e2) {
				t.Fatalf("ParseExpr(%q) = %+v, ParseExpr(%q) = %+v", s, e, v, e2)
			}
		}
	})
}
