package producercli

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/agentfleet/agentfleet/internal/cliflag"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// runAwait is "await <invocation_id>": print the invocation's result, stored
// or future.
func runAwait(ctx context.Context, args []string, g *globals, env Env) int {
	fs := flag.NewFlagSet("await", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	g.register(fs)
	var asJSON bool
	fs.BoolVar(&asJSON, "json", false, "print the result envelope as JSON")
	pos, err := cliflag.ParseInterspersed(fs, args)
	if err != nil {
		return usageCode(err)
	}
	if g.badTimeout(env.Stderr, "await") {
		return ExitUsage
	}
	if len(pos) != 1 || !envelope.ValidID(pos[0]) {
		fmt.Fprintln(env.Stderr, "producer await: want one invocation id ([A-Za-z0-9_-]{1,128})")
		return ExitUsage
	}
	nc, c, err := connect(g)
	if err != nil {
		fmt.Fprintln(env.Stderr, "producer await:", err)
		return ExitError
	}
	defer nc.Close()
	id := pos[0]
	return awaitAndPrint(ctx, id, g, env, asJSON, func(actx context.Context) (*envelope.Result, error) {
		return c.Await(actx, id)
	})
}

// awaitAndPrint waits up to --timeout for the result of id (await) and
// prints it. A wait during which the server answered none of the result
// look-ups (client.ErrUnanswered: no JetStream responders, replies lost) is
// an error that names the cause (exit 1), as lookup's is, not a result
// that did not come in time.
func awaitAndPrint(ctx context.Context, id string, g *globals, env Env, asJSON bool,
	await func(context.Context) (*envelope.Result, error)) int {
	actx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	res, err := await(actx)
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, client.ErrUnanswered) {
			fmt.Fprintf(env.Stderr, "producer: no result for %s within %s: %v\n", id, g.timeout, err)
			return ExitError
		}
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			fmt.Fprintf(env.Stderr, "producer: no result for %s within %s\n", id, g.timeout)
			return ExitTimeout
		}
		fmt.Fprintln(env.Stderr, "producer:", err)
		return errorCode(ctx, err)
	}
	return printResult(env.Stdout, res, asJSON)
}

// asInvalid reports whether err is an invalid request.
func asInvalid(err error) bool {
	var ie *envelope.InvalidError
	return errors.As(err, &ie)
}
