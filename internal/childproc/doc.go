// Package childproc starts, watches and stops the child processes of the
// project's harnesses: the chaos soak's servers, workers and replayer, and
// the load generator's worker processes. A child writes its output to a log
// file of its own, runs in its own process group (a terminal's ^C reaches
// only the harness, which then stops it) and is SIGKILLed by the kernel if
// the harness dies (Pdeathsig), so a harness that crashes leaves none of
// its children running. Signals go to the child itself, not to its group:
// a grandchild (none of the fleet's commands starts one) is the child's to
// stop.
package childproc
