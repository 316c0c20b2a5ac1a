package producercli

import (
	"context"
	"flag"
	"fmt"
	"github.com/agentfleet/agentfleet/internal/cliflag"
	"strings"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// runSend is "send": publish one request, print its invocation id, and with
// --wait its result.
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
	fs.Var(meta, "metadata", "metadata key=value (repeatable)")
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
	return awaitAndPrint(ctx, c, rec.InvocationID, g, env, asJSON)
}
