package replayer

import (
	"encoding/json"
	"testing"
)

// Regression (found in review of this session's fix, twenty-second
// session): show --json during a Redis outage (7a75ac0) printed "effects": [],
// "events": [], the same values as for an invocation whose stores were
// read and hold nothing: a script that decides from `.effects | length ==
// 0` reads "no tool effect done" while nothing was looked up. The
// runbook says the look-ups are "marked NOT LOOKED UP"; in JSON only a
// separate stores_not_read flag says so. Not-looked-up fields should be
// null/absent (effects, events), so `.effects[]`
// fails instead of iterating nothing.
func TestShowJSONDuringRedisOutageDoesNotClaimNoEffects(t *testing.T) {
	x := newFx(t, true)
	ctx := ctxT(t)
	ids := x.seed("outage", 1, "SERVER", 0)

	down := downRedisURL(t)

	out := x.run(ctx, map[string]string{"AGENTFLEET_REDIS_URL": down}, "show", "--json", ids[0]).must(t, ExitOK, "show --json, Redis down")
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out.stdout), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"effects", "events"} {
		if v, ok := m[k]; ok && string(v) != "null" {
			t.Errorf("show --json with the stores not read: %q is %s, which reads as looked up and empty; want null or absent", k, v)
		}
	}
}
