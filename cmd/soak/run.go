package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/version"
)

type config struct {
	duration, interval time.Duration
	oipkit             string
}

// errFailed is a soak that ran and failed a bound or a request.
var errFailed = errors.New("soak failed")

// result is everything a soak writes.
type result struct {
	Started   time.Time       `json:"started"`
	Duration  float64         `json:"duration_s"`
	Interval  float64         `json:"interval_s"`
	Warmup    float64         `json:"warmup_s"`
	Server    string          `json:"server"` // the command line
	Version   string          `json:"version"`
	Pass      bool            `json:"pass"`
	Problems  []string        `json:"problems,omitempty"` // why it failed, besides the verdicts
	Verdicts  []Verdict       `json:"verdicts"`
	Workloads []workloadStats `json:"workloads"`
	Samples   []Sample        `json:"samples"`
}

// run starts the server, loads and samples it for cfg.duration, stops it
// and decides. A nil result means nothing ran.
func run(ctx context.Context, cfg config) (*result, error) {
	srv, err := startServer(ctx, cfg.oipkit)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	fmt.Printf("soak: %s (pid %d, log %s) for %v, sampled every %v\n", strings.Join(srv.cmd.Args, " "), srv.cmd.Process.Pid, srv.logPath, cfg.duration, cfg.interval)

	res := &result{Started: time.Now().UTC(), Duration: cfg.duration.Seconds(), Interval: cfg.interval.Seconds(),
		Warmup: WarmupOf(cfg.duration).Seconds(), Server: strings.Join(srv.cmd.Args, " "), Version: version.Version}
	cl, err := newClients(srv)
	if err != nil {
		return nil, err
	}
	defer cl.close()

	loadCtx, cancel := context.WithTimeout(ctx, cfg.duration)
	defer cancel()
	ws := workloads(cl)
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() { w.run(ctx, loadCtx) })
	}
	start := time.Now()
	var sampleErr error
	tick := time.NewTicker(cfg.interval)
	for done := false; !done; {
		s, err := sample(loadCtx, srv, cl.rest)
		if err != nil && loadCtx.Err() == nil {
			sampleErr = err
			cancel()
			break
		}
		if err == nil {
			s.T = time.Since(start).Seconds()
			for _, w := range ws {
				s.Requests += float64(w.requests.Load())
			}
			res.Samples = append(res.Samples, s)
			if len(res.Samples)%12 == 1 {
				fmt.Printf("soak: %4.0f s  rss %6.1f MiB  heap %6.1f MiB  goroutines %4.0f  files %3.0f  threads %3.0f  requests %.0f\n",
					s.T, s.RSS/(1<<20), s.HeapInuse/(1<<20), s.Goroutines, s.Files, s.Threads, s.Requests)
			}
		}
		select {
		case <-loadCtx.Done():
			done = true
		case <-srv.exited:
			sampleErr = fmt.Errorf("the server exited during the soak: %v (see %s)", srv.waitErr, srv.logPath)
			cancel()
			done = true
		case <-tick.C:
		}
	}
	tick.Stop()
	cancel()
	wg.Wait()
	for _, w := range ws {
		res.Workloads = append(res.Workloads, w.stats())
	}
	if ctx.Err() != nil {
		return res, fmt.Errorf("interrupted after %.0f s", time.Since(start).Seconds())
	}
	if sampleErr != nil {
		return res, sampleErr
	}
	res.Verdicts = Decide(res.Samples, res.Warmup, Rules)
	res.Pass = true
	for _, v := range res.Verdicts {
		if !v.Pass {
			res.Pass = false
		}
	}
	for _, w := range res.Workloads {
		if w.Errors > 0 {
			res.Pass = false
			res.Problems = append(res.Problems, fmt.Sprintf("workload %s: %d of %d requests failed", w.Name, w.Errors, w.Requests))
		}
		if w.Requests == 0 {
			res.Pass = false
			res.Problems = append(res.Problems, fmt.Sprintf("workload %s sent no request", w.Name))
		}
	}
	if !res.Pass {
		return res, errFailed
	}
	return res, nil
}

// server is the oipkit serve subprocess.
type server struct {
	cmd      *exec.Cmd
	httpURL  string
	grpcAddr string
	logPath  string
	log      *os.File
	exited   chan struct{}
	waitErr  error
	stopOnce sync.Once
}

// startServer starts oipkit serve on two free loopback ports, its log in a
// temporary file, and waits until it is ready.
func startServer(ctx context.Context, bin string) (*server, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	log, err := os.CreateTemp("", "oipkit-soak-serve-*.log")
	if err != nil {
		return nil, fmt.Errorf("server log: %w", err)
	}
	s := &server{httpURL: "http://127.0.0.1:" + strconv.Itoa(ports[0]), grpcAddr: "127.0.0.1:" + strconv.Itoa(ports[1]),
		logPath: log.Name(), log: log, exited: make(chan struct{})}
	s.cmd = exec.Command(bin, "serve", "--http", strings.TrimPrefix(s.httpURL, "http://"), "--grpc", s.grpcAddr, "--log-level", "warn")
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s serve: %w", bin, err)
	}
	go func() { s.waitErr = s.cmd.Wait(); close(s.exited) }()
	rest, err := client.NewREST(s.httpURL, false, client.Options{Timeout: time.Second})
	if err != nil {
		s.stop()
		return nil, err
	}
	defer rest.Close()
	for deadline := time.Now().Add(30 * time.Second); ; {
		if ok, _ := rest.ServerReady(ctx); ok {
			return s, nil
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("%s serve exited before it was ready: %v (see %s)", bin, s.waitErr, s.logPath)
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("%s serve not ready after 30 s (see %s)", bin, s.logPath)
		}
	}
}

// stop shuts the server down gracefully (SIGTERM), killing it after 40 s.
func (s *server) stop() {
	s.stopOnce.Do(func() {
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(40 * time.Second):
			s.cmd.Process.Kill()
			<-s.exited
		}
		s.log.Close()
		if fi, err := os.Stat(s.logPath); err == nil && fi.Size() == 0 {
			os.Remove(s.logPath) // nothing logged at warn: nothing to keep
		}
	})
}

// freePorts returns n loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// sample reads the server process from /proc and its /metrics.
func sample(ctx context.Context, srv *server, rest *client.REST) (Sample, error) {
	var s Sample
	pid := srv.cmd.Process.Pid
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, fmt.Errorf("sample the server: %w", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, _ := strings.Cut(line, ":")
		f := strings.Fields(v)
		switch {
		case k == "VmRSS" && len(f) == 2 && f[1] == "kB":
			kb, _ := strconv.ParseFloat(f[0], 64)
			s.RSS = kb * 1024
		case k == "Threads" && len(f) == 1:
			s.Threads, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return s, fmt.Errorf("sample the server's files: %w", err)
	}
	s.Files = float64(len(fds))
	r, err := rest.Do(ctx, "GET", "/metrics", nil, nil)
	if err != nil {
		return s, fmt.Errorf("sample the server's /metrics: %w", err)
	}
	if r.Status != 200 {
		return s, fmt.Errorf("sample the server's /metrics: HTTP %d", r.Status)
	}
	names := []string{"go_goroutines", "go_memstats_heap_inuse_bytes", "go_memstats_heap_objects"}
	values, err := gauges(r.Body, names...)
	if err != nil {
		return s, fmt.Errorf("sample the server's /metrics: %w", err)
	}
	for i, to := range []*float64{&s.Goroutines, &s.HeapInuse, &s.HeapObj} {
		v, ok := values[names[i]]
		if !ok {
			return s, fmt.Errorf("sample the server's /metrics: no %s (is the server older than these families?)", names[i])
		}
		*to = v
	}
	if s.RSS == 0 {
		return s, fmt.Errorf("sample the server: no VmRSS in /proc/%d/status", pid)
	}
	return s, nil
}

// gauges reads the named unlabelled gauges of a Prometheus text body with
// the Prometheus project's parser; a name absent (or not one unlabelled
// gauge) is left out of the map.
func gauges(body []byte, names ...string) (map[string]float64, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	out := make(map[string]float64, len(names))
	for _, name := range names {
		f := families[name]
		if f == nil || len(f.GetMetric()) != 1 || f.GetMetric()[0].GetGauge() == nil {
			continue
		}
		out[name] = f.GetMetric()[0].GetGauge().GetValue()
	}
	return out, nil
}

// summaryLines are what the soak prints at its end: one line per series.
func (r *result) summaryLines() []string {
	var out []string
	for _, v := range r.Verdicts {
		state := "pass"
		switch {
		case !v.Judged:
			state = "info"
		case !v.Pass:
			state = "FAIL"
		}
		out = append(out, fmt.Sprintf("%s %-12s %s; %s", state, v.Series, v.Detail, v.Bound))
	}
	var total, errs uint64
	for _, w := range r.Workloads {
		total += w.Requests
		errs += w.Errors
	}
	out = append(out, fmt.Sprintf("requests: %d in %d workloads, %d failed", total, len(r.Workloads), errs))
	problems := append([]string(nil), r.Problems...)
	sort.Strings(problems)
	for _, p := range problems {
		out = append(out, "FAIL "+p)
	}
	verdict := "PASS"
	if !r.Pass {
		verdict = "FAIL"
	}
	return append(out, fmt.Sprintf("soak: %s after %.0f s (%d samples, warm-up %.0f s)", verdict, r.Duration, len(r.Samples), r.Warmup))
}
