package producercli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Defaults of the global flags.
const (
	// DefaultNATSURL is used when neither --nats-url nor $EnvNATSURL is set.
	DefaultNATSURL = "nats://127.0.0.1:4222"
	// EnvNATSURL names the environment variable for --nats-url.
	EnvNATSURL = "AGENTFLEET_NATS_URL"
	// DefaultTimeout is --timeout's default.
	DefaultTimeout = 2 * time.Minute
	// connectTimeout bounds connecting to NATS.
	connectTimeout = 5 * time.Second
)

// Env is what Run talks to: the standard streams and the environment.
type Env struct {
	// Stdout receives results and the batch summary.
	Stdout io.Writer
	// Stderr receives diagnostics and the batch progress.
	Stderr io.Writer
	// Getenv reads the environment (os.Getenv when nil).
	Getenv func(string) string
	// Environ lists the environment (KEY=VALUE, as os.Environ) for the
	// check of AGENTFLEET_ variables (config.CheckEnv). When nil it is
	// os.Environ if Getenv is nil too, else nothing is checked (a test's
	// Getenv is not the process's environment).
	Environ func() []string
	// Terminal reports whether w is a terminal (for the progress bar);
	// when nil, an *os.File that is a terminal counts.
	Terminal func(w io.Writer) bool
}

// globals are the flags every command takes.
type globals struct {
	natsURL string
	timeout time.Duration
	streams streams.Config // the fleet's (streamsFromEnv)
}

// badTimeout reports (on w) a --timeout that is not positive: neither
// "wait forever" nor "do not wait" is what 0 would mean to everyone, so the
// command refuses it (ExitUsage) rather than guess.
func (g *globals) badTimeout(w io.Writer, cmd string) bool {
	if g.timeout > 0 {
		return false
	}
	fmt.Fprintf(w, "producer %s: --timeout must be positive (default %s), got %s\n", cmd, DefaultTimeout, g.timeout)
	return true
}

func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.natsURL, "nats-url", g.natsURL, "NATS server URL (env "+EnvNATSURL+")")
	fs.DurationVar(&g.timeout, "timeout", g.timeout, "how long to wait for a result (per invocation in a batch)")
}

// Run runs the producer command line args (without the program name) and
// returns the exit code. ctx ends the command early (signals).
func Run(ctx context.Context, args []string, env Env) int {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
		if env.Environ == nil {
			env.Environ = os.Environ
		}
	}
	if env.Terminal == nil {
		env.Terminal = isTerminal
	}
	g := globals{natsURL: DefaultNATSURL, timeout: DefaultTimeout}
	if u := env.Getenv(EnvNATSURL); u != "" {
		g.natsURL = u
	}
	fs := flag.NewFlagSet("producer", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	g.register(fs)
	fs.Usage = func() { usage(env.Stderr, fs) }
	if err := fs.Parse(args); err != nil {
		return usageCode(err)
	}
	if fs.NArg() == 0 {
		usage(env.Stderr, fs)
		return ExitUsage
	}
	cmd, rest := fs.Arg(0), fs.Args()[1:]
	var run func(context.Context, []string, *globals, Env) int
	switch cmd {
	case "send":
		run = runSend
	case "await":
		run = runAwait
	case "batch":
		run = runBatch
	case "help":
		usage(env.Stdout, fs)
		return ExitOK
	default:
		fmt.Fprintf(env.Stderr, "producer: unknown command %q\n", cmd)
		usage(env.Stderr, fs)
		return ExitUsage
	}
	// As the worker and the replayer: a likely typo of an AGENTFLEET_ key
	// (the URL's variable without its last underscore) is refused, other
	// unknown names are a warning.
	// A producer with the URL's variable misspelt published to
	// nats://127.0.0.1:4222, whatever server that is (left open in the
	// twentieth session's first fix, then closed).
	if env.Environ != nil && !asksHelp(rest) {
		warnings, err := config.CheckEnv(env.Environ())
		for _, w := range warnings {
			fmt.Fprintln(env.Stderr, "producer: warning:", w)
		}
		if err != nil {
			fmt.Fprintln(env.Stderr, "producer:", err)
			return ExitUsage
		}
	}
	// The fleet's stream names and subject prefixes, from the worker's
	// variables: with the defaults always, a fleet configured with another
	// results prefix got every request and every line timed out.
	if !asksHelp(rest) {
		sc, err := streamsFromEnv(env.Getenv)
		if err != nil {
			fmt.Fprintln(env.Stderr, "producer:", err)
			return ExitUsage
		}
		g.streams = sc
	}
	return run(ctx, rest, &g, env)
}

// streamEnv are the worker's stream settings the producer reads from the
// environment, as the worker names them: the names and subject prefixes
// of the requests and the results. The others (the DLQ, replicas, ages,
// consumers) do not concern it.
var streamEnv = []struct {
	key   string // the worker's configuration key
	field func(*streams.Config) *string
}{
	{"streams.requests", func(c *streams.Config) *string { return &c.RequestsStream }},
	{"streams.results", func(c *streams.Config) *string { return &c.ResultsStream }},
	{"streams.request_prefix", func(c *streams.Config) *string { return &c.RequestPrefix }},
	{"streams.result_prefix", func(c *streams.Config) *string { return &c.ResultPrefix }},
}

// streamsFromEnv returns the streams the producer uses: the defaults,
// with the requests' and the results' names and subject prefixes taken
// from the worker's variables (AGENTFLEET_STREAMS_REQUESTS, _RESULTS,
// _REQUEST_PREFIX, _RESULT_PREFIX) when set, so a producer run beside a
// fleet configured so reaches it (found in review, twenty-fifth session:
// it always used the defaults, and with a fleet's other results prefix
// every batch line timed out). Only these four are checked, as the
// worker checks them (valid names and prefixes, the two streams' names
// different, neither prefix overlapping the other): a value the worker
// would refuse is an error naming the variables set. The DLQ's are not
// the producer's: checked with the defaults filled in for them, a request
// prefix "agent" that the worker takes beside its own DLQ prefix
// overlapped the default "agent.dlq", and every command exited 2 (found
// in review of this session's fix, twenty-fifth session).
func streamsFromEnv(getenv func(string) string) (streams.Config, error) {
	var sc streams.Config
	for _, v := range streamEnv {
		if got := getenv(envName(v.key)); got != "" {
			*v.field(&sc) = got
		}
	}
	sc = sc.WithDefaults()
	if err := validateProducerStreams(sc); err != nil {
		var names []string
		for _, v := range streamEnv {
			if getenv(envName(v.key)) != "" {
				names = append(names, envName(v.key))
			}
		}
		return sc, fmt.Errorf("the stream settings of %s: %w", strings.Join(names, ", "), err)
	}
	return sc, nil
}

// validateProducerStreams checks the stream settings the producer uses
// (streamEnv) as streams.Config.Validate checks them, and no others. It
// returns the first problem as a *streams.ConfigError.
func validateProducerStreams(sc streams.Config) error {
	for _, n := range []struct{ field, v string }{
		{"RequestsStream", sc.RequestsStream}, {"ResultsStream", sc.ResultsStream},
	} {
		if err := envelope.ValidateStreamName(n.v); err != nil {
			return &streams.ConfigError{Field: n.field, Reason: err.Error()}
		}
	}
	if sc.RequestsStream == sc.ResultsStream {
		return &streams.ConfigError{Field: "ResultsStream", Reason: "the requests' and the results' stream names must differ"}
	}
	prefixes := []struct{ field, v string }{
		{"RequestPrefix", sc.RequestPrefix}, {"ResultPrefix", sc.ResultPrefix},
	}
	for _, p := range prefixes {
		if err := envelope.ValidateSubjectPrefix(p.v); err != nil {
			return &streams.ConfigError{Field: p.field, Reason: err.Error()}
		}
	}
	for i, a := range prefixes {
		for j, b := range prefixes {
			if i != j && (a.v == b.v || strings.HasPrefix(b.v, a.v+".")) {
				return &streams.ConfigError{Field: b.field, Reason: fmt.Sprintf("%q overlaps %s %q", b.v, a.field, a.v)}
			}
		}
	}
	return nil
}

// envName is the environment variable of a configuration key.
func envName(key string) string {
	return config.EnvPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `usage:
  producer [flags] send --agent A --user U --session S [--invocation ID] [--metadata k=v]... [--wait] [--json] TEXT...
  producer [flags] await [--json] INVOCATION_ID
  producer [flags] batch --file requests.jsonl [--rate N] [--concurrency N]

exit codes: 0 ok, 1 error, 2 usage, 3 timeout, 4 not completed, 130 interrupted
streams: the defaults, or the fleet's from AGENTFLEET_STREAMS_REQUESTS, _RESULTS,
  _REQUEST_PREFIX and _RESULT_PREFIX (the worker's variables)
flags:
`)
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// usageCode maps a flag parse error to an exit code (-h is not an error).
func usageCode(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	return ExitUsage
}

// connect opens the NATS connection and the client; close the returned
// connection when done.
//
// A connection that drops reconnects for as long as the command runs
// (nats.MaxReconnects(-1)): with nats.go's default (60 attempts 2 s apart)
// a NATS restart of more than about two minutes closed it for good, and
// every line of a batch still to run failed as an error although Await
// survives a restart. The command's own --timeout, its context (signals)
// and nc.Close bound the wait instead. The first connect is not retried
// (no nats.RetryOnFailedConnect): a server down when the command starts
// still fails it at once (exit 1).
func connect(g *globals) (*nats.Conn, *client.Client, error) {
	nc, err := nats.Connect(g.natsURL, nats.Name("agentfleet-producer"), nats.Timeout(connectTimeout),
		nats.MaxReconnects(-1))
	if err != nil {
		// The URL may carry a token or a password, and nats.go's error
		// may quote it: neither reaches the terminal (or a CI log).
		return nil, nil, fmt.Errorf("connect to %s: %w", config.RedactNATSURL(g.natsURL), config.RedactConnectError(err, g.natsURL))
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("jetstream: %w", err)
	}
	c, err := client.New(js, nc, ClientConfig(g.streams))
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, c, nil
}

// ClientConfig returns the client configuration matching a stream
// configuration (defaults applied).
func ClientConfig(sc streams.Config) client.Config {
	sc = sc.WithDefaults()
	return client.Config{
		RequestsStream: sc.RequestsStream, ResultsStream: sc.ResultsStream,
		RequestPrefix: sc.RequestPrefix, ResultPrefix: sc.ResultPrefix,
	}
}

// errorCode maps an error of a command to an exit code.
func errorCode(ctx context.Context, err error) int {
	var pe *client.PublishError
	switch {
	case ctx.Err() != nil:
		return ExitInterrupted
	case errors.As(err, &pe):
		return ExitError // a publish failed, also when its PubAck timed out
	case errors.Is(err, context.DeadlineExceeded):
		return ExitTimeout
	}
	return ExitError
}

// asksHelp reports whether a command's arguments ask for its help (-h,
// -help, --help, before a "--"): help is printed whatever the environment
// holds, as the worker's and the replayer's.
func asksHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help", "--h":
			return true
		}
	}
	return false
}
