package selftest

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/oipkit/oipkit/conformance/report"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// routeBudget is how soon a run against a server whose inference route
// never answers must end (issue 8: "within 60 s"), with the default
// --timeout of 10 s: one timeout per route, not one per spec.
const routeBudget = 60 * time.Second

// TestInferRouteNeverAnswers: a server that accepts inference requests over
// both transports and never answers them. After the first timeout on a
// route, the specs needing it are reported not run, and the run ends as
// incomplete (exit 2).
func TestInferRouteNeverAnswers(t *testing.T) {
	b := breakage{
		name: "infer-never-answers",
		rest: &restHook{serve: func(w http.ResponseWriter, r *http.Request) bool {
			if !isInfer(r) {
				return false
			}
			// Read the request first: net/http notices a client that went
			// away, and cancels r's context, only once the body is read.
			requestBody(r)
			select {
			case <-r.Context().Done(): // the client gave up
			case <-time.After(2 * routeBudget): // a test that outlived its budget
			}
			return true
		}},
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if _, ok := req.(*pb.ModelInferRequest); ok {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return h(ctx, req)
		},
	}
	httpURL, grpcAddr := brokenServer(t, b)
	run := conform(t, "--http", httpURL, "--grpc", grpcAddr)
	t.Logf("exit %d after %v", run.exit, run.elapsed)
	if run.exit != 2 {
		t.Errorf("exit %d, want 2 (incomplete)\n%s", run.exit, lastLines(run.output, 30))
	}
	if run.elapsed > routeBudget {
		t.Errorf("took %v, want under %v", run.elapsed, routeBudget)
	}
	if run.report == nil {
		t.Fatalf("no report\n%s", run.output)
	}
	if !run.report.Incomplete || !strings.Contains(run.report.Problem, "route does not answer: REST POST /v2/models/{m}/infer") ||
		!strings.Contains(run.report.Problem, "route does not answer: gRPC /inference.GRPCInferenceService/ModelInfer") {
		t.Errorf("report does not say which routes did not answer: incomplete=%v, problem %q", run.report.Incomplete, run.report.Problem)
	}
	for _, id := range []string{"OIP-REST-INFER-001", "OIP-REST-RESP-002", "OIP-EXT-BIN-005", "OIP-GRPC-INFER-005", "OIP-GRPC-RAW-004"} {
		q, _ := run.report.Requirement(id)
		if q.Status != report.StatusNotRun || !strings.Contains(q.Reason, "route does not answer") {
			t.Errorf("%s: %s (%s), want not-run because the route does not answer", id, q.Status, q.Reason)
		}
	}
	// What does not need inference was still checked.
	for _, id := range []string{"OIP-REST-HEALTH-001", "OIP-REST-MMETA-005", "OIP-GRPC-META-002"} {
		if q, _ := run.report.Requirement(id); q.Status != report.StatusPassed {
			t.Errorf("%s: %s, want passed", id, q.Status)
		}
	}
	if !strings.Contains(run.output, "NOT RUN route does not answer") {
		t.Errorf("the summary does not list the not-run requirements:\n%s", lastLines(run.output, 40))
	}
}
