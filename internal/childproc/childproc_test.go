package childproc

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestStartStopAndLog(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	var s Set
	// The child says it is ready, then waits for a signal: trap TERM so
	// that a clean exit (status 0) shows Stop delivered the signal asked for.
	p, err := s.Start(dir, "child", "/bin/sh", []string{"-c", `trap 'echo got-term; exit 0' TERM; echo ready; while :; do sleep 0.05; done`}, Env())
	if err != nil {
		t.Fatal(err)
	}
	waitLog(t, p, "ready")
	if p.Exited() || p.State() != nil {
		t.Fatal("child reported as exited while it runs")
	}
	if p.PID() <= 0 || p.PID() == os.Getpid() {
		t.Fatalf("pid %d is not a child's", p.PID())
	}
	// Its own process group: a terminal's ^C to the harness's group does
	// not reach it.
	if pgid, err := syscall.Getpgid(p.PID()); err != nil || pgid != p.PID() {
		t.Fatalf("child's process group %d (%v), want its own (%d)", pgid, err, p.PID())
	}
	p.Stop(syscall.SIGTERM, 10*time.Second)
	if !p.Exited() {
		t.Fatal("Stop returned before the child exited")
	}
	if err := p.Err(); err != nil || p.State().ExitCode() != 0 {
		t.Fatalf("child ended with %v (code %d), want a clean exit from its TERM trap", err, p.State().ExitCode())
	}
	waitLog(t, p, "got-term")
	if p.LogPath != filepath.Join(dir, "child.log") {
		t.Fatalf("log path %q", p.LogPath)
	}
}

func TestStopKillsAfterGrace(t *testing.T) {
	defer goleak.VerifyNone(t)
	var s Set
	p, err := s.Start(t.TempDir(), "stubborn", "/bin/sh", []string{"-c", `trap '' TERM; echo ready; while :; do sleep 0.05; done`}, Env())
	if err != nil {
		t.Fatal(err)
	}
	waitLog(t, p, "ready")
	p.Stop(syscall.SIGTERM, 100*time.Millisecond)
	ws, ok := p.State().Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("a child that ignores SIGTERM ended with %v, want SIGKILL after the grace", p.State())
	}
}

func TestKillAll(t *testing.T) {
	defer goleak.VerifyNone(t)
	var s Set
	dir := t.TempDir()
	var ps []*Proc
	for _, name := range []string{"a", "b"} {
		p, err := s.Start(dir, name, "/bin/sh", []string{"-c", "exec sleep 60"}, Env())
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	s.KillAll()
	for _, p := range ps { // a child KillAll missed would end its sleep with status 0
		ws, ok := p.State().Sys().(syscall.WaitStatus)
		if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("%s ended with %v, want SIGKILL", p.Name, p.State())
		}
	}
}

func TestStartMissingBinary(t *testing.T) {
	var s Set
	if _, err := s.Start(t.TempDir(), "missing", filepath.Join(t.TempDir(), "no-such-binary"), nil, Env()); err == nil {
		t.Fatal("starting a missing binary did not fail")
	}
}

func TestEnvDropsTheCallersConfiguration(t *testing.T) {
	t.Setenv("AGENTFLEET_NATS_URL", "nats://elsewhere:4222")
	t.Setenv("CHILDPROC_KEPT", "1")
	env := Env("AGENTFLEET_LOG_LEVEL=error")
	if slices.Contains(env, "AGENTFLEET_NATS_URL=nats://elsewhere:4222") {
		t.Fatal("the caller's AGENTFLEET_* setting reached the child")
	}
	if !slices.Contains(env, "CHILDPROC_KEPT=1") || !slices.Contains(env, "AGENTFLEET_LOG_LEVEL=error") {
		t.Fatalf("env lost a variable: %v", env)
	}
}

func TestFindModuleDir(t *testing.T) {
	root, err := FindModuleDir(".")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "go.mod")); err != nil || !strings.Contains(string(b), "module github.com/agentfleet/agentfleet") {
		t.Fatalf("module dir %s: %v", root, err)
	}
	if _, err := os.Stat("/go.mod"); err == nil {
		t.Skip("/ holds a go.mod")
	}
	if _, err := FindModuleDir("/"); err == nil {
		t.Fatal("/ has a module dir")
	}
}

// waitLog waits until the child's log holds want (or the child exits).
func waitLog(t *testing.T, p *Proc, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(p.LogPath)
		if strings.Contains(string(b), want) {
			return
		}
		select {
		case <-p.Done():
			b, _ = os.ReadFile(p.LogPath)
			if strings.Contains(string(b), want) {
				return
			}
			t.Fatalf("child exited (%v) without writing %q: %q", p.Err(), want, b)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("child never wrote %q", want)
}
