package replayer

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/dlq"
	"github.com/agentfleet/agentfleet/pkg/envelope"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// ShownEvent is one session event in short form.
type ShownEvent struct {
	// Author is "user" or the agent's name.
	Author string `json:"author"`
	// Kind is text, call, response or other.
	Kind string `json:"kind"`
	// Text is the text (clipped) or the function name.
	Text string `json:"text"`
	// Time is when the event was stored.
	Time time.Time `json:"time"`
}

// ShownEffect is one tool effect recorded for the invocation.
type ShownEffect struct {
	// Tool, State, Attempts, CompletedAt, Key and Result are the
	// idempotency record's fields (idempotency.Record).
	Tool        string            `json:"tool"`
	State       idempotency.State `json:"state"`                 // State is the record's state.
	Attempts    int               `json:"attempts"`              // Attempts is the record's attempt count.
	CompletedAt time.Time         `json:"completed_at,omitzero"` // CompletedAt is when the effect completed.
	LeaseUntil  time.Time         `json:"lease_until,omitzero"`  // LeaseUntil is when an in-progress claim's lease ends.
	Key         string            `json:"key"`                   // Key is the idempotency key.
	Result      json.RawMessage   `json:"result,omitempty"`      // Result is the recorded tool result.
}

// Shown is what show prints about one invocation.
type Shown struct {
	// InvocationID is the invocation shown.
	InvocationID string `json:"invocation_id"`
	// Entries and Parked are its DLQ and parked entries. Nothing replays a
	// parked entry by itself: its Replayable says whether replay --parked
	// would take it (ListedEntry.Replayable).
	Entries []ListedEntry `json:"entries"`
	Parked  []ListedEntry `json:"parked,omitempty"` // Parked are its parked entries.
	// Record is the worker's invocation record, if any.
	Record *session.Invocation `json:"record,omitempty"`
	// RecordReplayCount is the replay count the record was written with.
	RecordReplayCount int           `json:"record_replay_count"`
	Session           *session.Key  `json:"session,omitempty"` // Session is the invocation's session, if known.
	Events            []ShownEvent  `json:"events"`            // Events are the invocation's session events, shortened.
	Effects           []ShownEffect `json:"effects"`           // Effects are the tool effects recorded for the invocation.
	// StoresNotRead says that the fleet's stores could not be reached
	// (Redis down: the stores check warned "stores not checked"), so the
	// invocation record, the session events and the tool effects were not
	// looked up: Record, Events and Effects are nil (JSON null) for that
	// reason, not empty because there are none.
	StoresNotRead bool `json:"stores_not_read,omitempty"`
	// Problems lists look-ups that failed (the rest is still shown).
	Problems []string `json:"problems,omitempty"`
}

func showFlags(fs *flag.FlagSet, o *cmdOpts) {}

func runShow(ctx context.Context, c *cmdCtx, pos []string) error {
	if len(pos) != 1 || !envelope.ValidID(pos[0]) {
		return usagef("show wants one invocation id ([A-Za-z0-9_-]{1,128})")
	}
	f, err := c.openFleet(ctx, true, tryStoresCheck) // show changes nothing: a check that cannot be decided warns
	if err != nil {
		return err
	}
	defer f.Close()
	sh, err := Show(ctx, f, pos[0], c.env.Now())
	if err != nil {
		return err
	}
	if c.opts.asJSON {
		return writeJSON(c.env.Stdout, sh)
	}
	sh.Write(c.env.Stdout, c.env.Now())
	return nil
}

// Show gathers an invocation's DLQ and parked entries, its invocation
// record, its session events and its completed tool effects, at now (an
// entry is replayable as a replay made then would take it: ListedEntry). It
// returns ErrNotFound when none of them exists. A fleet opened without its
// stores (f.Stores nil: Redis out of reach) gets the entries only, with
// StoresNotRead set and the look-ups left out named in Problems.
func Show(ctx context.Context, f *Fleet, id string, now time.Time) (*Shown, error) {
	sh := &Shown{InvocationID: id, Events: []ShownEvent{}, Effects: []ShownEffect{}}
	sel, err := f.autoSelection(ctx, now, false)
	if err != nil {
		sh.Problems = append(sh.Problems, "replayable: "+err.Error())
	}
	parkedSel := sel
	parkedSel.MaxReplays = math.MaxInt // replay --parked does not park again
	collect := func(r *dlq.Reader, sel Selection) ([]ListedEntry, error) {
		// [] rather than null in --json when there is none, as list --json
		// and show's events and effects (found in review, eighteenth
		// session: jq '.entries[]' failed for a completed invocation).
		out := []ListedEntry{}
		for it, err := range r.List(ctx, dlq.Filter{}) {
			if it == nil {
				return out, err
			}
			if !ofInvocation(it, id) {
				continue
			}
			out = append(out, listedEntry(it, sel))
		}
		return out, nil
	}
	if sh.Entries, err = collect(f.Reader, sel); err != nil {
		return nil, err
	}
	if ok, _ := f.Parked.Exists(ctx); ok {
		if sh.Parked, err = collect(f.Parked.Reader(), parkedSel); err != nil {
			sh.Problems = append(sh.Problems, "parked stream: "+err.Error())
		}
	}
	if f.Stores == nil {
		// show during a Redis outage (found in review, twenty-second
		// session): the entries need no store; say what was not looked up.
		sh.StoresNotRead = true
		// null in JSON, not []: a script reading "no effects" from an
		// empty list would be wrong (found in review of this session's
		// fix, twenty-second session).
		sh.Events, sh.Effects = nil, nil
		sh.Problems = append(sh.Problems, "stores not checked: the invocation record, session events and tool effects were not looked up "+
			"(the fleet's stores could not be reached); a replay may find tool effects already done")
		sh.Session = sessionFromEntries(append(append([]ListedEntry(nil), sh.Entries...), sh.Parked...))
	} else {
		sh.readStores(ctx, f.Stores, id)
	}
	if err := f.CheckRetention(ctx); err != nil {
		// show is how on-call looks into a misconfigured fleet: say it, go on.
		sh.Problems = append(sh.Problems, "replay safety: "+err.Error())
	}
	if len(sh.Entries) == 0 && len(sh.Parked) == 0 && sh.Record == nil && len(sh.Events) == 0 && len(sh.Effects) == 0 {
		if sh.StoresNotRead {
			return nil, fmt.Errorf("%s: no DLQ or parked entry (the invocation record, session events and tool effects were not looked up: "+
				"the fleet's stores could not be reached): %w", id, ErrNotFound)
		}
		return nil, fmt.Errorf("%s: no DLQ or parked entry, invocation record, session event or tool effect: %w", id, ErrNotFound)
	}
	return sh, nil
}

// readStores looks up the invocation's record, session events and tool
// effects in st, noting in sh.Problems the look-ups that failed.
func (sh *Shown) readStores(ctx context.Context, st *app.Stores, id string) {
	rec, err := st.Invocations.Get(ctx, id)
	switch {
	case errors.Is(err, session.ErrInvocationNotFound):
	case err != nil:
		sh.Problems = append(sh.Problems, "invocation record: "+err.Error())
	default:
		sh.Record = rec
		if r, err := worker.DecodeRecord(rec); err == nil {
			sh.RecordReplayCount = r.ReplayCount
		}
		if rec.Session.Validate() == nil {
			k := rec.Session
			sh.Session = &k
		}
	}
	if sh.Session == nil {
		sh.Session = sessionFromEntries(append(append([]ListedEntry(nil), sh.Entries...), sh.Parked...))
	}
	if sh.Session != nil {
		s, err := st.Sessions.Get(ctx, *sh.Session)
		switch {
		case errors.Is(err, session.ErrNotFound):
		case err != nil:
			sh.Problems = append(sh.Problems, "session: "+err.Error())
		default:
			for _, ev := range s.InvocationEvents(id) {
				sh.Events = append(sh.Events, shortEvents(ev)...)
			}
		}
	}
	effects, err := st.Idempotency.Effects(ctx, id)
	if err != nil {
		sh.Problems = append(sh.Problems, "tool effects: "+err.Error())
	}
	for _, r := range effects {
		se := ShownEffect{Tool: r.Tool, State: r.State, Attempts: r.Attempts,
			CompletedAt: r.CompletedAt, Key: r.Key, Result: r.Result}
		if r.State == idempotency.StateInProgress {
			se.LeaseUntil = r.LeaseUntil
		}
		sh.Effects = append(sh.Effects, se)
	}
}

// inProgressNote tells on-call what an in-progress effect means: its
// worker may be running it, or may have died during the call, so the
// effect may or may not have happened downstream.
func inProgressNote(e ShownEffect, now time.Time) string {
	lease := "its lease has ended"
	if e.LeaseUntil.After(now) {
		lease = "its lease ends in " + e.LeaseUntil.Sub(now).Round(time.Second).String()
	}
	return "IN PROGRESS: " + lease + "; the call may or may not have reached the downstream service. " +
		"A replay waits for the lease, then runs the tool again with the same idempotency key " + e.Key +
		", which the downstream service must deduplicate; check it there first if it cannot."
}

// sessionFromEntries reads the session key from an entry's request.
func sessionFromEntries(entries []ListedEntry) *session.Key {
	for _, le := range entries {
		if le.Entry == nil {
			continue
		}
		var req envelope.Request
		if json.Unmarshal(le.Entry.OriginalRequest(), &req) != nil {
			continue
		}
		k := session.Key{App: req.Agent, UserID: req.UserID, SessionID: req.SessionID}
		if k.Validate() == nil {
			return &k
		}
	}
	return nil
}

// shortEvents turns one event into short lines: text, function calls and
// function responses by name.
func shortEvents(ev *session.Event) []ShownEvent {
	var out []ShownEvent
	add := func(kind, text string) {
		out = append(out, ShownEvent{Author: ev.Author, Kind: kind, Text: text, Time: ev.Timestamp})
	}
	if ev.Content != nil {
		for _, p := range ev.Content.Parts {
			switch {
			case p == nil:
			case p.FunctionCall != nil:
				add("call", p.FunctionCall.Name)
			case p.FunctionResponse != nil:
				add("response", p.FunctionResponse.Name)
			case p.Text != "":
				add("text", clip(strings.Join(strings.Fields(p.Text), " "), 100))
			}
		}
	}
	if len(out) == 0 {
		what := "no content"
		if ev.ErrorCode != "" {
			what = "error " + string(ev.ErrorCode)
		}
		add("other", what)
	}
	return out
}

// ownFailure reports whether h is e's own failure (the one e's fields
// hold), which Park appends to a parked copy's History.
func ownFailure(e *dlq.Entry, h dlq.Failure) bool {
	return h.Class == e.Class && h.Reason == e.Reason && h.FailedAt.Equal(e.FailedAt) && h.ReplayCount == e.ReplayCount
}

// Write prints the invocation for on-call.
func (sh *Shown) Write(w io.Writer, now time.Time) {
	fmt.Fprintf(w, "invocation %s\n", sh.InvocationID)
	writeEntries := func(title string, es []ListedEntry, parked bool) {
		for _, le := range es {
			if le.Entry == nil {
				fmt.Fprintf(w, "\n%s seq %d (%s): BAD ENTRY: %s\n", title, le.Seq, le.Subject, le.Error)
				continue
			}
			e := le.Entry
			// Nothing replays a parked entry by itself: its Replayable says
			// whether replay --parked would take it (found in review,
			// twenty-fifth session: show called it "auto-replayable").
			rep, notBy := "auto-replayable", "not replayed by replay or drain"
			switch {
			case parked && le.Replayable:
				rep = "parked: bring it back with replay --parked"
			case parked:
				rep, notBy = "parked; needs a person", "not replayed by replay --parked"
			case !le.Replayable:
				rep = "needs a person"
			}
			fmt.Fprintf(w, "\n%s seq %d, stored %s ago\n", title, le.Seq, age(now, le.Stored))
			fmt.Fprintf(w, "  class %s (%s), agent %s, model %s\n", e.Class, rep, e.Agent, dash(e.Model))
			if !le.Replayable && le.Why != "" {
				fmt.Fprintf(w, "  %s: %s\n", notBy, le.Why)
			}
			fmt.Fprintf(w, "  reason: %s\n", e.Reason)
			fmt.Fprintf(w, "  replay count %d, delivery count %d, worker %s\n", e.ReplayCount, e.DeliveryCount, dash(e.Worker))
			fmt.Fprintf(w, "  first failed %s, failed %s\n", e.FirstFailedAt.UTC().Format(time.RFC3339), e.FailedAt.UTC().Format(time.RFC3339))
			if e.ToolsCompletedOmitted > 0 {
				// The entry keeps the most recent names (dlq.MaxToolsCompletedSize).
				fmt.Fprintf(w, "  tools completed before the failure (%d earlier ones not listed): %s\n", e.ToolsCompletedOmitted, strings.Join(e.ToolsCompleted, ", "))
			} else {
				fmt.Fprintf(w, "  tools completed before the failure: %s\n", dash(strings.Join(e.ToolsCompleted, ", ")))
			}
			if e.RequestTruncated {
				fmt.Fprintf(w, "  request TRUNCATED: %d of %d bytes kept; cannot be replayed\n", len(e.RequestRaw), e.RequestSize)
			}
			for _, h := range e.History {
				if ownFailure(e, h) {
					continue // Park records the entry's own failure in History: it is printed above
				}
				fmt.Fprintf(w, "  earlier failure: %s %s at %s (replay %d)\n", h.Class, h.Reason, h.FailedAt.UTC().Format(time.RFC3339), h.ReplayCount)
			}
		}
	}
	if len(sh.Entries) == 0 {
		fmt.Fprintln(w, "\nno DLQ entry")
	}
	writeEntries("DLQ entry", sh.Entries, false)
	writeEntries("PARKED entry", sh.Parked, true)
	if sh.Record != nil {
		fmt.Fprintf(w, "\ninvocation record: %s, attempts %d, replay count %d", sh.Record.Status, sh.Record.Attempts, sh.RecordReplayCount)
		if sh.Record.Error != "" {
			fmt.Fprintf(w, ", error: %s", sh.Record.Error)
		}
		fmt.Fprintln(w)
	}
	if sh.StoresNotRead {
		if sh.Session != nil {
			fmt.Fprintf(w, "\nsession %s/%s/%s: events NOT LOOKED UP (stores not reached)\n", sh.Session.App, sh.Session.UserID, sh.Session.SessionID)
		}
		fmt.Fprintln(w, "\ninvocation record and tool effects: NOT LOOKED UP (stores not reached): some tools may have completed; run show again once the stores answer")
		for _, p := range sh.Problems {
			fmt.Fprintf(w, "WARNING: %s\n", p)
		}
		return
	}
	if sh.Session != nil {
		fmt.Fprintf(w, "\nsession %s/%s/%s: %d events of this invocation\n", sh.Session.App, sh.Session.UserID, sh.Session.SessionID, len(sh.Events))
		for i, ev := range sh.Events {
			fmt.Fprintf(w, "  %2d. %s %s: %s\n", i+1, ev.Author, ev.Kind, ev.Text)
		}
	}
	fmt.Fprintf(w, "\ntool effects recorded (%d):", len(sh.Effects))
	if len(sh.Effects) == 0 {
		fmt.Fprint(w, " none")
	}
	fmt.Fprintln(w)
	for _, e := range sh.Effects {
		note := inProgressNote(e, now)
		if e.State == idempotency.StateCompleted {
			note = "ALREADY DONE at " + e.CompletedAt.UTC().Format(time.RFC3339) + "; a replay reuses the stored result and does not run it again"
		}
		fmt.Fprintf(w, "  %s %s (attempts %d): %s\n", e.Tool, e.State, e.Attempts, note)
		if len(e.Result) > 0 {
			fmt.Fprintf(w, "    result: %s\n", clip(string(e.Result), 160))
		}
	}
	for _, p := range sh.Problems {
		fmt.Fprintf(w, "WARNING: %s\n", p)
	}
}
