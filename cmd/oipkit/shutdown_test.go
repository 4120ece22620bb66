package main

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/loadgen"
	"github.com/oipkit/oipkit/loadgen/loadgentest"
	"github.com/oipkit/oipkit/loadgen/oiptarget"
)

// TestServeSIGTERMUnderLoad measures graceful shutdown: `oipkit serve` runs
// in a process of its own (the signal is real) under an open-loop load of
// delay requests (500 ms each at 100/s, some 50 in flight), and is sent
// SIGTERM once 50 answers came. The run goes on for seconds after it. Over
// REST JSON, REST binary and gRPC, separately, it checks that:
//
//   - every request the server took was answered completely and validly:
//     the generator's OK count equals the count of inference requests the
//     server reports it answered as it stops, with every answer validated;
//   - every other request was refused cleanly ("refused": the connection
//     was refused, or a gRPC call the server said it did not process), so
//     retrying elsewhere is safe: none was lost (reset or cut after it went
//     out), truncated, or hung (no timeouts; every request sent completed);
//   - every request that completed before the signal succeeded;
//   - the signal found requests in flight, and requests came after it, so
//     the test exercised both sides;
//   - serve exited 0 (a clean shutdown).
//
// It asserts on counts only; the timeouts are generous.
func TestServeSIGTERMUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a server process under load for about 10 s")
	}
	for _, p := range []client.Protocol{client.ProtocolHTTP, client.ProtocolHTTPBinary, client.ProtocolGRPC} {
		t.Run(string(p), func(t *testing.T) { sigtermUnderLoad(t, p) })
	}
}

// signalAfter is how many answers come before SIGTERM is sent.
const signalAfter = 50

func sigtermUnderLoad(t *testing.T, p client.Protocol) {
	srv := startServeProcess(t)
	cfg := loadgen.Config{
		Target: loadgen.TargetConfig{Protocol: p, Model: "delay",
			Timeout: loadgen.Duration(time.Minute), ReadyTimeout: loadgen.Duration(30 * time.Second)},
		Inputs: loadgen.InputConfig{Parameters: []string{"delay_ms=500"}, Validate: true},
		Load:   loadgen.LoadConfig{Rate: loadgentest.Rate("100"), Duration: loadgen.Duration(3 * time.Second)},
	}
	if p.IsGRPC() {
		cfg.Target.GRPC = srv.grpcAddr
	} else {
		cfg.Target.HTTP = "http://" + srv.httpAddr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	target, err := oiptarget.NewTarget(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()

	st := &signalTarget{Target: target, answered: make(chan struct{})}
	type runResult struct {
		res *loadgen.Result
		err error
	}
	ran := make(chan runResult, 1)
	go func() {
		res, err := loadgen.Run(ctx, st, cfg)
		ran <- runResult{res, err}
	}()
	select {
	case <-st.answered:
	case r := <-ran:
		t.Fatalf("the run ended before %d answers: %v %+v", signalAfter, r.err, r.res.Counts)
	}
	st.signalled.Store(true) // before the signal: a request completed before it completed before the flag
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code := srv.wait(t)
	r := <-ran
	if r.err != nil {
		t.Fatal(r.err)
	}
	res := r.res
	log := srv.log()
	if code != 0 {
		t.Errorf("serve exited %d after SIGTERM:\n%s", code, log)
	}
	inflight, okIn := logCount(log, "reference server shutting down", "inflight")
	answered, okAn := logCount(log, "reference server stopped", "answered")
	if !okIn || !okAn {
		t.Fatalf("serve did not log its shutdown counts:\n%s", log)
	}

	var before, beforeOK, after, afterOK, doneBefore int64
	for _, q := range st.requests() {
		switch {
		case q.startedBefore:
			before++
			if q.err == nil {
				beforeOK++
			}
		default:
			after++
			if q.err == nil {
				afterOK++
			}
		}
		if q.doneBefore {
			doneBefore++
			if q.err != nil {
				t.Errorf("a request that completed before the signal failed: %v", q.err)
			}
		}
	}
	c := res.Counts
	t.Logf("%s: server: %d in flight at SIGTERM, %d answered in all; generator: %d sent (%d before the signal: %d OK, %d completed before it; %d after: %d OK), %d OK, %d failed %v, %d timed out; samples %v",
		p, inflight, answered, c.Sent, before, beforeOK, doneBefore, after, afterOK, c.OK, c.Errors, res.Errors, c.Timeouts, res.ErrorSamples)

	if inflight == 0 {
		t.Errorf("no request was in flight when SIGTERM arrived: the test measured nothing")
	}
	if res.Errors["refused"] == 0 {
		t.Errorf("no request was refused after SIGTERM: the load did not outlast the server")
	}
	// None lost, truncated or hung: every failure is a refusal. (Requests
	// the generator dropped or left unsent, falling behind on a loaded
	// machine, never reached the server.)
	if c.Timeouts != 0 || c.Errors != res.Errors["refused"] || c.Completed != c.Sent {
		t.Errorf("lost requests: %+v, failures by class %v", c, res.Errors)
	}
	// Every request the server took reached the generator whole and valid.
	if uint64(c.OK) != answered {
		t.Errorf("the server answered %d inference requests, the generator received %d valid answers", answered, c.OK)
	}
	if n := int64(len(st.requests())); n != c.Sent {
		t.Errorf("%d requests recorded, %d sent", n, c.Sent)
	}
}

// signalTarget records, for every request, whether it started and
// completed before SIGTERM was sent, and its outcome; answered is closed at
// the signalAfter-th answer.
type signalTarget struct {
	loadgen.Target
	signalled atomic.Bool
	oks       atomic.Int64
	answered  chan struct{}

	mu   sync.Mutex
	reqs []request
}

type request struct {
	startedBefore, doneBefore bool
	err                       error
}

func (s *signalTarget) Do(ctx context.Context, seq uint64) error {
	before := !s.signalled.Load()
	err := s.Target.Do(ctx, seq)
	q := request{startedBefore: before, doneBefore: !s.signalled.Load(), err: err}
	s.mu.Lock()
	s.reqs = append(s.reqs, q)
	s.mu.Unlock()
	if err == nil && s.oks.Add(1) == signalAfter {
		close(s.answered)
	}
	return err
}

func (s *signalTarget) requests() []request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reqs
}

// serveProcess is `oipkit serve` running in a child process, on free
// loopback ports.
type serveProcess struct {
	cmd                *exec.Cmd
	httpAddr, grpcAddr string
	done               chan struct{} // closed when its standard error ends

	mu    sync.Mutex
	lines []string
}

var listeningLine = regexp.MustCompile(`msg="(REST|gRPC) listening" addr=(\S+)`)

func startServeProcess(t *testing.T) *serveProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperOipkit$", "--",
		"serve", "--http", "127.0.0.1:0", "--grpc", "127.0.0.1:0", "--log-level", "info")
	cmd.Env = append(os.Environ(), envHelper+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sp := &serveProcess{cmd: cmd, done: make(chan struct{})}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	addrs := make(chan [2]string, 2)
	go func() {
		defer close(sp.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			sp.mu.Lock()
			sp.lines = append(sp.lines, sc.Text())
			sp.mu.Unlock()
			if m := listeningLine.FindStringSubmatch(sc.Text()); m != nil {
				addrs <- [2]string{m[1], m[2]}
			}
		}
	}()
	timeout := time.After(time.Minute)
	for sp.httpAddr == "" || sp.grpcAddr == "" {
		select {
		case a := <-addrs:
			if a[0] == "REST" {
				sp.httpAddr = a[1]
			} else {
				sp.grpcAddr = a[1]
			}
		case <-sp.done:
			cmd.Wait()
			t.Fatalf("serve ended before listening:\n%s", sp.log())
		case <-timeout:
			t.Fatalf("serve did not listen within a minute:\n%s", sp.log())
		}
	}
	return sp
}

// wait waits for the process to end and returns its exit code.
func (sp *serveProcess) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-sp.done:
	case <-time.After(time.Minute):
		sp.cmd.Process.Kill()
		t.Fatalf("serve still runs a minute after SIGTERM:\n%s", sp.log())
	}
	err := sp.cmd.Wait()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return 0
}

func (sp *serveProcess) log() string {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return strings.Join(sp.lines, "\n")
}

// logCount reads the count key=N of the log line with message msg.
func logCount(log, msg, key string) (uint64, bool) {
	m := regexp.MustCompile(`msg="` + regexp.QuoteMeta(msg) + `".* ` + regexp.QuoteMeta(key) + `=(\d+)`).FindStringSubmatch(log)
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseUint(m[1], 10, 64)
	return n, err == nil
}
