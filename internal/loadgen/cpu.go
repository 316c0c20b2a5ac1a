package loadgen

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// cpuMeter measures the CPU time a phase used: this process (workers,
// consumers and the load generator; with --embedded also the NATS server),
// the worker processes of --processes,
// the Redis server (INFO cpu; it may serve others too) and a local
// nats-server process if one is found. On a shared, noisy machine CPU per
// invocation is steadier than a rate.
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

func startCPU(ctx context.Context, rdb *redis.Client, external bool, children func() time.Duration) *cpuMeter {
	m := &cpuMeter{rdb: rdb, children: children, embedded: !external}
	if external {
		m.natsPID = findProcess("nats-server")
	}
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

// findProcess returns the pid of the first process named comm (0 if none).
func findProcess(comm string) int {
	dirs, _ := filepath.Glob("/proc/[0-9]*/comm")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err == nil && strings.TrimSpace(string(b)) == comm {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
			return pid
		}
	}
	return 0
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
