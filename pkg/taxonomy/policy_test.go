package taxonomy_test

import (
	"testing"

	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

func TestPolicyTable_OneRowPerClass(t *testing.T) {
	all := []taxonomy.Class{
		taxonomy.Transport, taxonomy.Timeout, taxonomy.RateLimited, taxonomy.QuotaExhausted,
		taxonomy.Server, taxonomy.BadRequest, taxonomy.Auth, taxonomy.NotFound,
		taxonomy.PromptBlocked, taxonomy.OutputBlocked, taxonomy.Truncated, taxonomy.ToolProtocol,
		taxonomy.CallBudget, taxonomy.Unknown, taxonomy.BadInput,
	}
	rows := taxonomy.Policies()
	if len(rows) != len(all) {
		t.Fatalf("%d rows, want %d", len(rows), len(all))
	}
	seen := map[taxonomy.Class]bool{}
	for _, p := range rows {
		if seen[p.Class] {
			t.Fatalf("class %s has two rows", p.Class)
		}
		seen[p.Class] = true
		if p.View != taxonomy.ViewReliability && p.View != taxonomy.ViewCorrectness && p.View != taxonomy.ViewPolicy {
			t.Errorf("%s: view %q", p.Class, p.View)
		}
		if p.Rule == "" {
			t.Errorf("%s: no rule text", p.Class)
		}
		if p.Page && !p.Alert {
			t.Errorf("%s: Page without Alert", p.Class)
		}
		if p.Degrade && !p.Retryable {
			t.Errorf("%s: degrades without being retried first", p.Class)
		}
		if p.AutoReplay && !p.DeadLetter {
			t.Errorf("%s: auto-replay without dead-letter", p.Class)
		}
		if got, _ := taxonomy.ParseClass(string(p.Class)); got != p.Class {
			t.Errorf("ParseClass(%s) = %s", p.Class, got)
		}
	}
	for _, c := range all {
		if !seen[c] {
			t.Errorf("class %s has no row", c)
		}
	}
	if got := taxonomy.Classes(); len(got) != len(all) {
		t.Errorf("Classes() has %d entries", len(got))
	}
}

// TestPolicyTable_DesignRules pins the rows to DESIGN.md's taxonomy and
// outcome tables.
func TestPolicyTable_DesignRules(t *testing.T) {
	type row struct{ retry, degrade, refuse, flag, page, alert, dlq, replay, avail bool }
	want := map[taxonomy.Class]row{
		taxonomy.Transport:      {retry: true, degrade: true, dlq: true, replay: true, avail: true},
		taxonomy.Timeout:        {retry: true, degrade: true, dlq: true, replay: true, avail: true},
		taxonomy.RateLimited:    {retry: true, degrade: true, dlq: true, replay: true, avail: true},
		taxonomy.Server:         {retry: true, degrade: true, dlq: true, replay: true, avail: true},
		taxonomy.QuotaExhausted: {dlq: true, replay: true, avail: true},
		taxonomy.BadRequest:     {page: true, alert: true, dlq: true, avail: true},
		taxonomy.Auth:           {page: true, alert: true, dlq: true, avail: true},
		taxonomy.NotFound:       {page: true, alert: true, dlq: true, avail: true},
		taxonomy.PromptBlocked:  {refuse: true},
		taxonomy.OutputBlocked:  {refuse: true},
		taxonomy.Truncated:      {flag: true},
		taxonomy.ToolProtocol:   {},
		taxonomy.CallBudget:     {alert: true, dlq: true, avail: true},
		taxonomy.Unknown:        {dlq: true, avail: true},
		taxonomy.BadInput:       {dlq: true},
	}
	for c, w := range want {
		p := taxonomy.PolicyFor(c)
		got := row{p.Retryable, p.Degrade, p.Refuse, p.Flag, p.Page, p.Alert, p.DeadLetter, p.AutoReplay, p.CountsAgainstAvailability}
		if got != w {
			t.Errorf("%s: got %+v, want %+v", c, got, w)
		}
	}
	views := map[taxonomy.Class]taxonomy.View{
		taxonomy.Transport: taxonomy.ViewReliability, taxonomy.Server: taxonomy.ViewReliability,
		taxonomy.Auth: taxonomy.ViewCorrectness, taxonomy.CallBudget: taxonomy.ViewCorrectness,
		taxonomy.OutputBlocked: taxonomy.ViewPolicy, taxonomy.Truncated: taxonomy.ViewPolicy,
	}
	for c, v := range views {
		if got := taxonomy.PolicyFor(c).View; got != v {
			t.Errorf("%s: view %s, want %s", c, got, v)
		}
	}
}

func TestPolicyFor_Unlisted(t *testing.T) {
	p := taxonomy.PolicyFor("SOMETHING_NEW")
	if p.Class != "SOMETHING_NEW" || p.Retryable || !p.DeadLetter || p.AutoReplay {
		t.Fatalf("unlisted class must get UNKNOWN's rules: %+v", p)
	}
	c := taxonomy.PolicyFor(taxonomy.Canceled)
	if c.Retryable || c.Degrade || c.DeadLetter || c.Page || c.CountsAgainstAvailability || c.View != "" {
		t.Fatalf("CANCELED must do nothing: %+v", c)
	}
	if _, err := taxonomy.ParseClass("CANCELED"); err == nil {
		t.Fatal("ParseClass accepted CANCELED")
	}
}

func TestPolicies_ReturnsCopy(t *testing.T) {
	rows := taxonomy.Policies()
	rows[0].Retryable = !rows[0].Retryable
	if taxonomy.Policies()[0].Retryable == rows[0].Retryable {
		t.Fatal("Policies exposes the table itself")
	}
}
