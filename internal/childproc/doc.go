// Package childproc starts, watches and stops the child processes of the
// project's harnesses: the chaos soak's servers, workers and replayer, and
// the load generator's worker processes. A child writes its output to a log
// file of its own, runs in its own process group (a terminal's ^C reaches
// only the harness, which then stops it) and is SIGKILLed by the kernel if
// the harness dies, so no run leaves a worker behind.
package childproc
