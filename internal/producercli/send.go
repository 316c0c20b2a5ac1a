package producercli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet/internal/cliflag"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// runSend is "send": publish one request, print its invocation id, and with
// --wait its result. With --wait and --invocation, the id's stored result is
// looked up before the send (like a batch line's): a final one
// (client.StoredResult.Final: any but a BAD_INPUT refusal) is printed and
// the request is not sent again, as client.SubmitAndAwait does (the worker
// would answer it with that result and run nothing); when it is a
// BAD_INPUT refusal, the request runs again and the result printed is the one that
// follows the refusal (client.AwaitSent), unless the requests stream
// dropped the send as a duplicate of the refused request itself (then the
// refusal is printed, with a note to send it again after the duplicate
// window; a duplicate of a later resend gets that resend's result).
func runSend(ctx context.Context, args []string, g *globals, env Env) int {
	fs := flag.NewFlagSet("send", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	g.register(fs)
	var (
		agent, user, session, invocation string
		wait, asJSON                     bool
		meta                             = kvFlag{}
	)
	fs.StringVar(&agent, "agent", "", "agent name (required)")
	fs.StringVar(&user, "user", "", "user id (required)")
	fs.StringVar(&session, "session", "", "session id (required)")
	fs.StringVar(&invocation, "invocation", "", "invocation id (default: a new UUID)")
	fs.Var(meta, "metadata", "metadata key=value (repeat the flag for more keys; each key may be given once)")
	fs.BoolVar(&wait, "wait", false, "wait for the result and print it")
	fs.BoolVar(&asJSON, "json", false, "print the result envelope as JSON")
	pos, err := cliflag.ParseInterspersed(fs, args)
	if err != nil {
		return usageCode(err)
	}
	if g.badTimeout(env.Stderr, "send") {
		return ExitUsage
	}
	text := strings.Join(pos, " ")
	if agent == "" || user == "" || session == "" || strings.TrimSpace(text) == "" {
		fmt.Fprintln(env.Stderr, "producer send: --agent, --user, --session and a text are required")
		return ExitUsage
	}
	req := &envelope.Request{
		InvocationID: invocation, Agent: agent, UserID: user, SessionID: session,
		Message: model.NewTextContent(model.RoleUser, text),
	}
	if len(meta) > 0 {
		req.Metadata = meta
	}
	nc, c, err := connect(g)
	if err != nil {
		fmt.Fprintln(env.Stderr, "producer send:", err)
		return ExitError
	}
	defer nc.Close()
	// With --wait, the result stored for the id before this send tells
	// which result is this send's (client.AwaitSent): a stored BAD_INPUT
	// refusal is followed by the result of this run (found in review,
	// nineteenth session: it used to be printed as this send's result).
	var before *client.StoredResult
	if wait && envelope.ValidID(invocation) { // else a new id, or Send refuses it
		// Refused as Send would refuse it, also when a stored result
		// would answer it.
		// Its size too (found in review, twenty-fourth session: an
		// oversized request with a final stored result printed it, exit 0).
		if err := c.Check(req); err != nil {
			fmt.Fprintln(env.Stderr, "producer send:", err)
			return ExitUsage
		}
		stored, err := lookup(ctx, c, invocation, g.timeout)
		switch {
		case err == nil && stored.Final():
			// Found in review, twenty-fourth session: it was sent
			// again, a copy queued for the fleet to answer with this.
			fmt.Fprintf(env.Stderr, "producer send: %s already has a result (stored %s); not sent again\n",
				invocation, stored.Time.UTC().Format(time.RFC3339))
			fmt.Fprintln(env.Stderr, "invocation", invocation)
			return printResult(env.Stdout, stored.Result, asJSON)
		case err == nil:
			before = stored
		case !errors.Is(err, client.ErrNoResult):
			fmt.Fprintln(env.Stderr, "producer send:", err)
			return errorCode(ctx, err)
		}
	}
	rec, err := c.Send(ctx, req)
	if err != nil {
		fmt.Fprintln(env.Stderr, "producer send:", err)
		if asInvalid(err) {
			return ExitUsage
		}
		return errorCode(ctx, err)
	}
	if rec.Duplicate {
		fmt.Fprintf(env.Stderr, "producer send: %s is a duplicate of the request at seq %d; not submitted again\n", rec.InvocationID, rec.Sequence)
	}
	if !wait {
		fmt.Fprintln(env.Stdout, rec.InvocationID)
		return ExitOK
	}
	fmt.Fprintln(env.Stderr, "invocation", rec.InvocationID)
	return awaitAndPrint(ctx, rec.InvocationID, g, env, asJSON, func(actx context.Context) (*envelope.Result, error) {
		res, err := c.AwaitSent(actx, rec, before)
		// A duplicate of the refused request itself is answered with the
		// refusal (AwaitSent returns before.Result); one of a later resend
		// with that resend's result, and says nothing here (found in
		// review, twenty-first session: this was said of every duplicate
		// after a refusal, before the result was known).
		if err == nil && rec.Duplicate && before != nil && before.RefusedAsBadInput() && res == before.Result {
			fmt.Fprintln(env.Stderr, "producer send: its result is the earlier BAD_INPUT refusal; send it again once the requests stream's duplicate window has passed")
		}
		return res, err
	})
}
