package loadgen

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// rssMeter measures a phase's peak resident set: it frees what earlier
// phases left (GC, return memory to the OS), resets the kernel's high-water
// mark (write 5 to /proc/self/clear_refs) and reads VmHWM at the end. If the
// reset is not allowed it falls back to the highest VmRSS sampled every
// 20 ms (ru_maxrss cannot be reset between phases); with the reset the
// sampling is a cross-check every 500 ms (reading /proc/self/status of a
// process with thousands of goroutines costs CPU).
type rssMeter struct {
	reset  bool
	stop   chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex
	maxRSS int64
}

func startRSS(ctx context.Context) *rssMeter {
	runtime.GC()
	debug.FreeOSMemory()
	m := &rssMeter{stop: make(chan struct{})}
	m.reset = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		every := 20 * time.Millisecond
		if m.reset {
			every = 500 * time.Millisecond
		}
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			m.observe()
			select {
			case <-ctx.Done():
				return
			case <-m.stop:
				return
			case <-t.C:
			}
		}
	}()
	return m
}

func (m *rssMeter) observe() {
	if v := procStatus("VmRSS"); v > 0 {
		m.mu.Lock()
		m.maxRSS = max(m.maxRSS, v)
		m.mu.Unlock()
	}
}

// finish returns the peak and where it came from.
func (m *rssMeter) finish() (int64, string) {
	close(m.stop)
	m.wg.Wait()
	m.observe()
	m.mu.Lock()
	sampled := m.maxRSS
	m.mu.Unlock()
	if m.reset {
		if hwm := procStatus("VmHWM"); hwm > 0 {
			return max(hwm, sampled), "VmHWM (reset per phase)"
		}
	}
	if sampled > 0 {
		return sampled, "VmRSS sampled every 20ms"
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		return ru.Maxrss * 1024, "ru_maxrss (whole process so far)"
	}
	return 0, "unavailable"
}

// procStatus reads a "kB" field of /proc/self/status in bytes (0 if
// unavailable).
func procStatus(field string) int64 { return pidStatus("self", field) }

// pidStatus reads a "kB" field of /proc/<pid>/status in bytes (0 if
// unavailable); pid is a number or "self".
func pidStatus(pid, field string) int64 {
	f, err := os.Open("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0
		}
		return n * 1024
	}
	return 0
}
