package selftest

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// TestServerKilledByOneRequest: a server that answers one extension
// request and then exits (as Triton 2.51 does after one deeply nested
// JSON body) fails exactly the requirement of the spec that sent it, the
// finding names that request and carries it as the evidence (so its
// reproducer replays it), the remaining specs are not run, and the run
// ends quickly with exit status 2.
func TestServerKilledByOneRequest(t *testing.T) {
	for _, c := range []struct {
		name    string
		kills   func(r *http.Request, body []byte) bool // REST
		killRPC func(req any) bool                      // gRPC
		req     string
		named   string // the request as the finding names it
	}{
		{
			name: "rest-repository-index-malformed",
			kills: func(r *http.Request, body []byte) bool {
				return r.URL.Path == "/v2/repository/index" && string(body) == `{"ready":"yes"}`
			},
			req:   "OIP-EXT-REPO-006",
			named: `POST /v2/repository/index with body {"ready":"yes"}`,
		},
		{
			name: "grpc-load-unknown-model",
			killRPC: func(req any) bool {
				r, ok := req.(*pb.RepositoryModelLoadRequest)
				return ok && r.GetModelName() == "does_not_exist"
			},
			req:   "OIP-EXT-REPO-013",
			named: `RPC RepositoryModelLoad with body {"modelName":"does_not_exist"}`,
		},
	} {
		t.Run(c.name, func(t *testing.T) { testKilled(t, c.kills, c.killRPC, c.req, c.named) })
	}
}

func testKilled(t *testing.T, kills func(*http.Request, []byte) bool, killRPC func(any) bool, req, named string) {
	// The killing request is answered; the server is gone for every
	// request after it, as a process that exits after answering.
	var dead atomic.Bool
	var stop func()
	var once sync.Once
	die := func() { once.Do(func() { go stop() }) }
	b := breakage{
		name: "dies-after-" + req,
		rest: &restHook{serve: func(w http.ResponseWriter, r *http.Request) bool {
			if dead.Load() {
				die()
				panic(http.ErrAbortHandler)
			}
			if kills != nil && kills(r, requestBody(r)) {
				dead.Store(true)
			}
			return false
		}},
		grpc: func(ctx context.Context, r any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if dead.Load() {
				die()
				<-ctx.Done() // Stop cancels this call and closes the connection
				return nil, ctx.Err()
			}
			resp, err := h(ctx, r)
			if killRPC != nil && killRPC(r) {
				dead.Store(true)
			}
			return resp, err
		},
	}
	httpURL, grpcAddr, stopFn := brokenServerStoppable(t, b)
	stop = stopFn
	run := conform(t, "--http", httpURL, "--grpc", grpcAddr, "--timeout", "2s")
	if run.exit != 2 {
		t.Errorf("exit %d, want 2\n%s", run.exit, run.output)
	}
	if run.elapsed > 60*time.Second {
		t.Errorf("took %v; a dead server must end the run quickly", run.elapsed)
	}
	if run.report == nil {
		t.Fatalf("no report\n%s", run.output)
	}
	if failed := run.report.WithStatus("failed"); len(failed) != 1 || failed[0] != req {
		t.Errorf("failed %v, want exactly [%s]\n%s", failed, req, run.output)
	}
	if notRun := run.report.WithStatus("not-run"); len(notRun) == 0 {
		t.Errorf("no requirement is not run after the server died\n%s", run.output)
	}
	if !run.report.Incomplete || !strings.Contains(run.report.Problem, "stopped answering after "+named) {
		t.Errorf("report problem %q, want an incomplete run that names %s", run.report.Problem, named)
	}
	t.Logf("exit %d in %v; problem: %s", run.exit, run.elapsed.Round(time.Second), run.report.Problem)
	q, _ := run.report.Requirement(req)
	var found bool
	for _, f := range q.Findings {
		if strings.Contains(f.Message, "stopped answering after "+named) && f.Evidence != nil &&
			!strings.Contains(f.Evidence.Request.Target, "health/live") && !strings.HasSuffix(f.Evidence.Request.Target, "ServerLive") &&
			f.Reproducer != "" && !strings.Contains(f.Reproducer, "health/live") && !strings.Contains(f.Reproducer, "ServerLive") {
			found = true
		}
	}
	if !found {
		t.Errorf("%s has no finding naming %s with that request as evidence and reproducer: %+v", req, named, q.Findings)
	}
}

// TestServerKilledByTheLastSpec: the requests some servers do not survive
// run last (deep nesting last of all), so a server that exits on the
// deeply nested body fails that spec's requirement, OIP-REST-ERR-007,
// named with that request, and nothing is left not run: the run is
// complete and fails (exit 3), not incomplete (exit 2).
func TestServerKilledByTheLastSpec(t *testing.T) {
	deep := []byte(strings.Repeat("[", 1000))
	var dead atomic.Bool
	var stop func()
	var once sync.Once
	b := breakage{
		name: "dies-after-deep-nesting",
		rest: &restHook{serve: func(w http.ResponseWriter, r *http.Request) bool {
			if dead.Load() {
				once.Do(func() { go stop() })
				panic(http.ErrAbortHandler)
			}
			if strings.Contains(string(requestBody(r)), string(deep)) {
				dead.Store(true)
				panic(http.ErrAbortHandler) // no answer, as a process that exits on it
			}
			return false
		}},
	}
	httpURL, grpcAddr, stopFn := brokenServerStoppable(t, b)
	stop = stopFn
	run := conform(t, "--http", httpURL, "--grpc", grpcAddr, "--timeout", "2s")
	if run.exit != 3 {
		t.Errorf("exit %d, want 3 (failed, complete)\n%s", run.exit, run.output)
	}
	if run.report == nil {
		t.Fatalf("no report\n%s", run.output)
	}
	if failed := run.report.WithStatus("failed"); len(failed) != 1 || failed[0] != "OIP-REST-ERR-007" {
		t.Errorf("failed %v, want exactly [OIP-REST-ERR-007]\n%s", failed, run.output)
	}
	if notRun := run.report.WithStatus("not-run"); len(notRun) != 0 || run.report.Incomplete {
		t.Errorf("not run %v, incomplete %v (%s): the server died on the last spec\n%s", notRun, run.report.Incomplete, run.report.Problem, run.output)
	}
}
