package loadgen

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// cpuMeter measures the CPU time a phase used: this process (workers,
// consumers and the load generator; with --embedded also the NATS server),
// the worker processes of --processes,
// the Redis server (INFO cpu; it may serve others too) and the run's NATS
// server when it is a local nats-server process (natsServer). On a shared,
// noisy machine CPU per invocation is steadier than a rate.
type cpuMeter struct {
	rdb              *redis.Client
	natsPID          int
	children         func() time.Duration // the worker processes' CPU so far (--processes), or nil
	self, rds, natsT time.Duration
	childT           time.Duration
	reads, cmds      int64 // -1: the first reading failed
	mallocs, bytes   uint64
	sysw, sysr       int64 // -1: /proc/self/io could not be read
	embedded         bool  // the NATS server runs in this process
}

// startCPU starts measuring; nats is the run's NATS server (natsServer).
func startCPU(ctx context.Context, rdb *redis.Client, nats natsProc, children func() time.Duration) *cpuMeter {
	m := &cpuMeter{rdb: rdb, children: children, embedded: nats.inProcess, natsPID: nats.pid}
	var ok bool
	if m.reads, m.cmds, ok = redisCounts(ctx, rdb); !ok {
		m.reads, m.cmds = -1, -1
	}
	m.self, m.rds, m.natsT, m.childT = selfCPU(), redisCPU(ctx, rdb), procCPU(m.natsPID), m.childrenCPU()
	m.mallocs, m.bytes = heapAllocs()
	m.sysw, m.sysr = syscalls()
	return m
}

// finish stores the CPU used since start, per completed invocation, in p.
func (m *cpuMeter) finish(ctx context.Context, p *Phase) {
	per := func(d time.Duration) float64 {
		if p.Completed == 0 || d <= 0 {
			return 0
		}
		return ms(d) / float64(p.Completed)
	}
	p.CPUMSPerInvocation = per(selfCPU() - m.self)
	if m.children != nil {
		// The worker processes' heap is not this process's: no
		// allocation counts, and their CPU is added to this process's.
		workers := m.childrenCPU() - m.childT
		p.WorkerCPUMSPerInvocation = per(workers)
		p.CPUMSPerInvocation = per(selfCPU() - m.self + workers)
	} else if mallocs, bytes := heapAllocs(); p.Completed > 0 {
		p.AllocsPerInvocation = float64(mallocs-m.mallocs) / float64(p.Completed)
		p.AllocKiBPerInvocation = float64(bytes-m.bytes) / 1024 / float64(p.Completed)
		if w, r := syscalls(); m.sysw >= 0 && w >= 0 {
			p.WritesPerInvocation = float64(w-m.sysw) / float64(p.Completed)
			p.ReadsPerInvocation = float64(r-m.sysr) / float64(p.Completed)
		}
	}
	if m.rdb != nil {
		p.RedisCPUMSPerInvocation = per(redisCPU(ctx, m.rdb) - m.rds)
		if reads, cmds, ok := redisCounts(ctx, m.rdb); ok && m.reads >= 0 && p.Completed > 0 && reads > m.reads {
			p.RedisReadsPerInvocation = float64(reads-m.reads) / float64(p.Completed)
			p.RedisCommandsPerInvocation = float64(cmds-m.cmds) / float64(p.Completed)
		}
	}
	if m.natsPID > 0 {
		p.NATSCPUMSPerInvocation = per(procCPU(m.natsPID) - m.natsT)
	}
	p.TotalCPUMSPerInvocation = totalCPU(p, m.embedded)
}

// childrenCPU is the worker processes' CPU so far (0 without them).
func (m *cpuMeter) childrenCPU() time.Duration {
	if m.children == nil {
		return 0
	}
	return m.children()
}

// heapAllocs returns this process's heap allocations so far: their count
// and bytes (runtime.ReadMemStats stops the world briefly: twice a phase).
func heapAllocs() (mallocs, bytes uint64) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs, ms.TotalAlloc
}

// syscalls returns this process's write and read system calls so far
// (syscw and syscr of /proc/self/io), or -1, -1 if it cannot tell.
func syscalls() (writes, reads int64) {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return -1, -1
	}
	writes, reads = -1, -1
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		n, perr := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch {
		case !ok || perr != nil:
		case k == "syscw":
			writes = n
		case k == "syscr":
			reads = n
		}
	}
	if writes < 0 || reads < 0 {
		return -1, -1
	}
	return writes, reads
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// redisCounts reads total_reads_processed and total_commands_processed of
// the Redis server; ok is false if it cannot.
func redisCounts(ctx context.Context, rdb *redis.Client) (reads, cmds int64, ok bool) {
	if rdb == nil {
		return 0, 0, false
	}
	info, err := rdb.Info(ctx, "stats").Result()
	if err != nil {
		return 0, 0, false
	}
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		switch {
		case ok && k == "total_reads_processed":
			reads, _ = strconv.ParseInt(v, 10, 64)
		case ok && k == "total_commands_processed":
			cmds, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return reads, cmds, reads > 0
}

// redisCPU reads used_cpu_user + used_cpu_sys of the Redis server.
func redisCPU(ctx context.Context, rdb *redis.Client) time.Duration {
	if rdb == nil {
		return 0
	}
	info, err := rdb.Info(ctx, "cpu").Result()
	if err != nil {
		return 0
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return time.Duration(total * float64(time.Second))
}

// natsProc is the run's NATS server as the CPU meter sees it: a process
// (pid), this process (inProcess: its CPU is this process's), or neither
// (not measured, note says why).
type natsProc struct {
	pid       int
	inProcess bool
	note      string // note describes what is measured, or why nothing is
}

// natsServer finds the process of the NATS server at natsURL: the one
// holding the listening TCP socket of the URL's port (/proc/net/tcp and
// tcp6, matched by inode with /proc/<pid>/fd), when the URL's host is this
// machine. Found in review, twenty-second session: the first process named
// nats-server was measured, whatever server the run used (a chaos soak's,
// the machine's own on :4222), its CPU reported as the run's. A server it
// cannot tie to the URL (a remote host, a port held by another process
// such as a container's proxy, a process whose descriptors it may not
// read) is not measured.
func natsServer(natsURL string) natsProc {
	urls := strings.Split(natsURL, ",")
	if len(urls) != 1 {
		return natsProc{note: "not measured: several server URLs"}
	}
	host, port, err := urlHostPort(strings.TrimSpace(urls[0]))
	if err != nil {
		return natsProc{note: "not measured: " + err.Error()}
	}
	if !localHost(host) {
		return natsProc{note: "not measured: " + host + " is not this machine"}
	}
	inodes := listeningInodes(port)
	if len(inodes) == 0 {
		return natsProc{note: fmt.Sprintf("not measured: no listening socket of port %d found", port)}
	}
	pids := socketOwners(inodes)
	switch {
	case len(pids) == 1 && pids[0] == os.Getpid():
		return natsProc{inProcess: true, note: "in this process"}
	case len(pids) != 1:
		return natsProc{note: fmt.Sprintf("not measured: port %d's listening socket held by %d processes found", port, len(pids))}
	}
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pids[0]) + "/comm")
	if comm := strings.TrimSpace(string(b)); comm != "nats-server" {
		return natsProc{note: fmt.Sprintf("not measured: port %d is held by pid %d (%s), not a nats-server", port, pids[0], comm)}
	}
	return natsProc{pid: pids[0], note: fmt.Sprintf("nats-server pid %d (listening on port %d)", pids[0], port)}
}

// urlHostPort returns the host and port of a NATS URL (port 4222 when
// the URL has none).
func urlHostPort(s string) (string, int, error) {
	if !strings.Contains(s, "://") {
		s = "nats://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", 0, fmt.Errorf("server URL: %w", err)
	}
	port := 4222
	if ps := u.Port(); ps != "" {
		if port, err = strconv.Atoi(ps); err != nil {
			return "", 0, fmt.Errorf("server URL port: %w", err)
		}
	}
	return u.Hostname(), port, nil
}

// localHost reports whether host names this machine: a loopback or
// unspecified address, localhost, or an address of one of its interfaces.
func localHost(host string) bool {
	if host == "" || strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false // a name: not resolved, it may name another machine
	}
	if ip.IsLoopback() || ip.IsUnspecified() {
		return true
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// listeningInodes returns the inodes of the listening TCP sockets (IPv4 and
// IPv6) on port, from /proc/net/tcp and /proc/net/tcp6.
func listeningInodes(port int) map[string]bool {
	out := map[string]bool{}
	want := fmt.Sprintf(":%04X", port)
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			// sl local_address rem_address st tx:rx tr:tm retrnsmt uid timeout inode
			fs := strings.Fields(line)
			if len(fs) >= 10 && strings.HasSuffix(fs[1], want) && fs[3] == "0A" && fs[9] != "0" {
				out[fs[9]] = true
			}
		}
	}
	return out
}

// socketOwners returns the pids, sorted, with a descriptor open on one of
// the socket inodes (those whose /proc/<pid>/fd it may read).
func socketOwners(inodes map[string]bool) []int {
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		fds, err := os.ReadDir(d + "/fd")
		if err != nil {
			continue
		}
		for _, fd := range fds {
			l, err := os.Readlink(d + "/fd/" + fd.Name())
			if err == nil && strings.HasPrefix(l, "socket:[") && inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] {
				pids = append(pids, pid)
				break
			}
		}
	}
	slices.Sort(pids)
	return pids
}

// procCPU returns utime + stime of pid (clock ticks of 10 ms).
func procCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// totalCPU is p's CPU per invocation in all three processes (this one,
// Redis, NATS), or 0 when one of them was not measured: NATS's counts as
// measured when the server runs in this process (natsEmbedded).
func totalCPU(p *Phase, natsEmbedded bool) float64 {
	if p.CPUMSPerInvocation <= 0 || p.RedisCPUMSPerInvocation <= 0 || (p.NATSCPUMSPerInvocation <= 0 && !natsEmbedded) {
		return 0
	}
	return p.CPUMSPerInvocation + p.RedisCPUMSPerInvocation + p.NATSCPUMSPerInvocation
}
