package replayer

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/cliflag"
	"io"

	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/internal/config"
)

// command is one subcommand: it registers its flags, then runs with the
// positional arguments.
type command struct {
	name    string
	summary string
	flags   func(fs *flag.FlagSet, o *cmdOpts)
	run     func(ctx context.Context, c *cmdCtx, pos []string) error
}

// cmdOpts holds every command's flags (each command registers its own).
type cmdOpts struct {
	common
	filterFlags
	max         int
	rate        float64
	concurrency int
	dryRun      bool
	yes         bool
	canary      int
	force       bool
	wait        bool
	parked      bool
	all         bool
	metricsAddr string
}

// cmdCtx is what a running command gets.
type cmdCtx struct {
	env  Env
	cfg  config.Replayer
	opts *cmdOpts
	log  zerolog.Logger
	// fs is the command's flag set (to tell which flags were given).
	fs *flag.FlagSet
}

func commands() []command {
	return []command{
		{"stats", "counts by class × agent, ages, replayable or not, parked count", statsFlags, runStats},
		{"list", "the entries (table or --json)", listFlags, runList},
		{"show", "show <invocation_id>: the entry, its session events and completed tool effects", showFlags, runShow},
		{"replay", "republish entries to the workers (--parked: from the parked stream)", replayFlags, runReplay},
		{"park", "move entries to the parked stream", parkFlags, runPark},
		{"purge", "delete entries (confirmation or --yes)", purgeFlags, runPurge},
		{"drain", "long-running: replay auto-replayable classes at a rate once their model's cooldown closed", drainFlags, runDrain},
	}
}

// Run runs the dlq-replayer command line args (without the program name)
// and returns the exit code (see the Exit constants). ctx ends the command
// early (signals).
func Run(ctx context.Context, args []string, env Env) int {
	env = env.withDefaults()
	o := &cmdOpts{}
	gfs := flag.NewFlagSet("dlq-replayer", flag.ContinueOnError)
	gfs.SetOutput(env.Stderr)
	o.common.register(gfs)
	gfs.Usage = func() { usage(env.Stderr) }
	if err := gfs.Parse(args); err != nil {
		return flagCode(err)
	}
	if gfs.NArg() == 0 {
		usage(env.Stderr)
		return ExitUsage
	}
	name, rest := gfs.Arg(0), gfs.Args()[1:]
	if name == "help" {
		usage(env.Stdout)
		return ExitOK
	}
	var cmd *command
	for _, c := range commands() {
		if c.name == name {
			cmd = &c
			break
		}
	}
	if cmd == nil {
		fmt.Fprintf(env.Stderr, "dlq-replayer: unknown command %q\n", name)
		usage(env.Stderr)
		return ExitUsage
	}
	fs := flag.NewFlagSet("dlq-replayer "+name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	o.common.register(fs)
	cmd.flags(fs, o)
	pos, err := cliflag.ParseInterspersed(fs, rest)
	if err != nil {
		return flagCode(err)
	}
	cfg, err := loadConfig(o, env)
	if err != nil {
		fmt.Fprintln(env.Stderr, "dlq-replayer:", err)
		return ExitUsage
	}
	c := &cmdCtx{env: env, cfg: cfg, opts: o, fs: fs,
		log: zerolog.New(env.Stderr).Level(logLevel(cfg.LogLevel)).With().Timestamp().Str("component", "dlq-replayer").Logger()}
	app.RouteRedisLogs(c.log)
	err = cmd.run(ctx, c, pos)
	if ctx.Err() != nil {
		err = interrupted(err)
	}
	if err != nil && !errors.Is(err, errQuiet) {
		fmt.Fprintf(env.Stderr, "dlq-replayer %s: %v\n", name, err)
	}
	return exitCode(ctx.Err() != nil, err)
}

// openFleet opens the fleet for a command that reads the fleet's stores
// (show, replay, drain): OpenFleet, after checking that the configured
// stores are the ones the fleet's workers record (ErrOtherStores, exit 3;
// a warning on stderr when the workers record none). check says what a
// check that cannot be decided does (ErrStoresNotChecked): fail the
// command (requireStoresCheck: replay, drain) or warn (tryStoresCheck:
// show, replay --dry-run).
func (c *cmdCtx) openFleet(ctx context.Context, withStores bool, check storesCheck) (*Fleet, error) {
	return openFleet(ctx, c.cfg, withStores, check, "", c.env.Stderr, c.log)
}

// openFleetFor is openFleet that also checks class (Fleet.checkClass)
// before it reaches Redis.
func (c *cmdCtx) openFleetFor(ctx context.Context, withStores bool, check storesCheck, class string) (*Fleet, error) {
	return openFleet(ctx, c.cfg, withStores, check, class, c.env.Stderr, c.log)
}

// errQuiet is returned by a command that already printed why it failed.
var errQuiet = errors.New("failed")

// loadConfig reads the configuration (file, env) and applies the flags.
func loadConfig(o *cmdOpts, env Env) (config.Replayer, error) {
	cfg, err := config.LoadReplayer(o.config, env.Lookup)
	if err != nil {
		return cfg, err
	}
	if o.natsURL.set {
		cfg.NATS.URL = o.natsURL.v
	}
	if o.redisURL.set {
		cfg.Redis.URL = o.redisURL.v
	}
	err = cfg.Validate()
	if env.Environ != nil {
		// As in the worker: an AGENTFLEET_ variable no command reads that
		// misspells one would silently fall back to a default (found in
		// review, twentieth session); any other is a warning.
		warnings, envErr := config.CheckEnv(env.Environ())
		for _, w := range warnings {
			fmt.Fprintf(env.Stderr, "dlq-replayer: warning: %s\n", w)
		}
		err = errors.Join(err, envErr)
	}
	return cfg, err
}

func logLevel(s string) zerolog.Level {
	l, err := zerolog.ParseLevel(s)
	if err != nil {
		return zerolog.InfoLevel
	}
	return l
}

// flagCode maps a flag parse error to an exit code (-h is not an error).
func flagCode(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	return ExitUsage
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: dlq-replayer <command> [flags]

commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
common flags: --config FILE, --nats-url URL (env AGENTFLEET_NATS_URL), --redis-url URL (env AGENTFLEET_REDIS_URL), --json
filters:      --class C, --agent A, --since T, --until T (RFC 3339 or a duration ago, e.g. 2h), --invocation ID;
              each one value, given once (run a command once per class), --since before --until
replay:       --dry-run, --yes, --max N, --rate N/s (0 = unthrottled), --concurrency N, --canary N, --wait, --force (with --class)
exit codes:   0 done, 1 error, 2 halted or refused by a safety rule, 3 usage or configuration (bad flags, a bad
              config file; show, replay and drain refuse stores that are not the ones the workers record), 130 interrupted
"dlq-replayer <command> -h" lists a command's flags. The runbook is docs/runbook.md.
`)
}
