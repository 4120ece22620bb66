package selftest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/oipkit/oipkit/conformance/report"
	"github.com/oipkit/oipkit/specs"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// One defect, one failure (issue 22): a server's one defect is one failed
// requirement, the others it hides are blocked by it, and probes see
// through defects of other rules.

// jsonHead decodes the JSON object a REST inference body starts with (the
// binary tail, if any, follows it); ok is false when it is no object.
func jsonHead(body []byte) (map[string]json.RawMessage, bool) {
	var m map[string]json.RawMessage
	err := json.NewDecoder(bytes.NewReader(body)).Decode(&m)
	return m, err == nil && m != nil
}

// withoutID breaks exactly one rule, as KServe 0.15 does: a valid
// inference request without an id (the id is optional) is answered 500
// over REST and INTERNAL over gRPC. Only requests the reference answers
// with success are broken, so that the refusal of a malformed request
// stays a 400.
var withoutID = breakage{
	name: "500-for-a-request-without-id",
	rest: &restHook{
		in: func(r *http.Request) {
			if m, ok := jsonHead(requestBody(r)); isInfer(r) && ok && m["id"] == nil {
				r.Header.Set(noIDHeader, "1")
			}
		},
		out: func(r *http.Request, a *answer) {
			if r.Header.Get(noIDHeader) != "" && a.status == 200 {
				a.status = 500
				a.header = http.Header{"Content-Type": {"application/json"}}
				a.body = []byte(`{"error":"ValidationError: id: Input should be a valid string"}`)
			}
		},
	},
	grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		resp, err := h(ctx, req)
		if m, ok := req.(*pb.ModelInferRequest); ok && m.GetId() == "" && err == nil {
			return nil, status.Error(codes.Internal, "Internal server error")
		}
		return resp, err
	},
}

// noIDHeader marks, between the hooks of withoutID, a request without an id.
const noIDHeader = "X-Selftest-No-Id"

// TestRequestWithoutID: the defect fails the two requirements whose
// subject is a request without an id, once each; every other rule is
// graded on requests that carry one and passes, and the probes, which send
// one, still observe the extensions (binary_tensor_data among them).
func TestRequestWithoutID(t *testing.T) {
	httpURL, grpcAddr := brokenServer(t, withoutID)
	run := conform(t, "--http", httpURL, "--grpc", grpcAddr)
	if run.report == nil {
		t.Fatalf("no report (exit %d)\n%s", run.exit, run.output)
	}
	want := []string{"OIP-GRPC-INFER-001", "OIP-REST-INFER-001"}
	if got := run.report.WithStatus(report.StatusFailed); !slices.Equal(got, want) {
		t.Errorf("failed %v, want %v\n%s", got, want, failureLines(run.output))
	}
	if got := run.report.WithStatus(report.StatusBlocked); len(got) > 0 {
		t.Errorf("blocked %v, want none: every other spec sends an id", got)
	}
	if n := run.report.DistinctDefects(); n != 2 {
		t.Errorf("distinct defects %d, want 2", n)
	}
	for _, e := range run.report.Extensions {
		if e.Advertised && e.Probe != report.ProbeObserved && e.Probe != report.ProbeNone {
			t.Errorf("extension %s: probe %s (%s), want observed: the probe's request carries an id", e.Name, e.Probe, e.Detail)
		}
	}
	if run.exit != 3 {
		t.Errorf("exit %d, want 3", run.exit)
	}
	if !strings.Contains(run.output, "distinct defects: 2") {
		t.Errorf("the summary does not count the distinct defects:\n%s", lastLines(run.output, 30))
	}
}

// TestCascadeIsBlocked: a server that answers 500 to a batch of three
// add_sub rows fails the batch rule (OIP-REST-INFER-013) once; the rule
// checked on the same answer (OIP-REST-RESP-010, the output's batch
// dimension) is blocked by it, linked, its finding kept, and not failed.
func TestCascadeIsBlocked(t *testing.T) {
	b := breakage{name: "500-for-a-batch-of-three", rest: &restHook{serve: func(w http.ResponseWriter, r *http.Request) bool {
		if isInfer(r) && strings.HasSuffix(r.URL.Path, "/add_sub/infer") && bytes.Contains(requestBody(r), []byte(`"shape":[3,16]`)) {
			jsonError(w, 500, `{"error":"batching is broken"}`)
			return true
		}
		return false
	}}}
	httpURL, grpcAddr := brokenServer(t, b)
	run := conform(t, "--http", httpURL, "--grpc", grpcAddr)
	if run.report == nil {
		t.Fatalf("no report (exit %d)\n%s", run.exit, run.output)
	}
	if got := run.report.WithStatus(report.StatusFailed); !slices.Equal(got, []string{"OIP-REST-INFER-013"}) {
		t.Errorf("failed %v, want [OIP-REST-INFER-013]\n%s", got, failureLines(run.output))
	}
	q, _ := run.report.Requirement("OIP-REST-RESP-010")
	if q.Status != report.StatusBlocked || !slices.Equal(q.BlockedBy, []string{"OIP-REST-INFER-013"}) || len(q.Findings) == 0 {
		t.Errorf("OIP-REST-RESP-010: %s by %v with %d findings, want blocked by OIP-REST-INFER-013 with its findings kept", q.Status, q.BlockedBy, len(q.Findings))
	}
	if got := run.report.WithStatus(report.StatusBlocked); !slices.Equal(got, []string{"OIP-REST-RESP-010"}) {
		t.Errorf("blocked %v, want [OIP-REST-RESP-010]", got)
	}
	if err := run.report.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	for _, p := range run.report.Profiles {
		if slices.Contains(p.Blocked, "OIP-REST-RESP-010") && !slices.Contains(p.Failed, "OIP-REST-INFER-013") {
			t.Errorf("profile %s blocks OIP-REST-RESP-010 without failing its cause", p.Name)
		}
	}
	if run.exit != 3 || run.report.DistinctDefects() != 1 {
		t.Errorf("exit %d, %d distinct defects; want 3, 1", run.exit, run.report.DistinctDefects())
	}
	if !strings.Contains(run.output, "BLOCKED by OIP-REST-INFER-013") || !strings.Contains(run.output, "OIP-REST-RESP-010") {
		t.Errorf("the summary does not list the blocked requirement:\n%s", lastLines(run.output, 30))
	}
}

// binaryInfer reports a REST inference carrying binary tensor data.
func binaryInfer(r *http.Request) bool {
	return isInfer(r) && (r.Header.Get("Inference-Header-Content-Length") != "" || bytes.Contains(requestBody(r), []byte("binary_data")))
}

// notAdvertising takes binary_tensor_data out of server metadata.
func notAdvertising(r *http.Request, a *answer) {
	if r.URL.Path == "/v2" {
		editJSON(a, func(m map[string]any) {
			exts, _ := m["extensions"].([]any)
			m["extensions"] = slices.DeleteFunc(exts, func(e any) bool { return e == string(specs.ExtBinaryTensorData) })
		})
	}
}

// TestProbeRetriesServerFault: a server whose first binary request fails
// with a 500 (a transient fault) is probed again, and its binary extension
// is observed and graded: no requirement fails.
func TestProbeRetriesServerFault(t *testing.T) {
	var faults atomic.Int32
	b := breakage{name: "one-500-for-binary", rest: &restHook{serve: func(w http.ResponseWriter, r *http.Request) bool {
		if binaryInfer(r) && faults.Add(1) == 1 {
			jsonError(w, 500, `{"error":"try again"}`)
			return true
		}
		return false
	}}}
	httpURL, grpcAddr := brokenServer(t, b)
	run := conform(t, "--http", httpURL, "--grpc", grpcAddr)
	if run.report == nil {
		t.Fatalf("no report (exit %d)\n%s", run.exit, run.output)
	}
	if e := extension(run.report, "binary_tensor_data"); e.Probe != report.ProbeObserved || !e.Tested {
		t.Errorf("binary_tensor_data: probe %s (%s), tested %v; want observed after one retry, tested", e.Probe, e.Detail, e.Tested)
	}
	if got := run.report.WithStatus(report.StatusFailed); len(got) > 0 || run.exit != 0 {
		t.Errorf("failed %v, exit %d; want none, 0\n%s", got, run.exit, failureLines(run.output))
	}
}

// TestInconclusiveProbeStillGrades: a server that does not list
// binary_tensor_data and answers every binary request 500 leaves the probe
// inconclusive (a fault is no evidence of absence): the extension is not
// reported unsupported, its specs run and fail, and its requirements say
// the probe was inconclusive.
func TestInconclusiveProbeStillGrades(t *testing.T) {
	b := breakage{name: "binary-500-not-advertised", rest: &restHook{
		serve: func(w http.ResponseWriter, r *http.Request) bool {
			if binaryInfer(r) {
				jsonError(w, 500, `{"error":"binary is broken"}`)
				return true
			}
			return false
		},
		out: notAdvertising,
	}, grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		resp, err := h(ctx, req)
		if m, ok := resp.(*pb.ServerMetadataResponse); ok && m != nil {
			m.Extensions = slices.DeleteFunc(m.Extensions, func(e string) bool { return e == string(specs.ExtBinaryTensorData) })
		}
		return resp, err
	}}
	httpURL, grpcAddr := brokenServer(t, b)
	run := conform(t, "--http", httpURL, "--grpc", grpcAddr)
	if run.report == nil {
		t.Fatalf("no report (exit %d)\n%s", run.exit, run.output)
	}
	if e := extension(run.report, "binary_tensor_data"); e.Advertised || e.Probe != report.ProbeInconclusive || !e.Tested {
		t.Errorf("binary_tensor_data: %+v, want not advertised, probe inconclusive, tested", e)
	}
	if q, _ := run.report.Requirement("OIP-EXT-BIN-001"); q.Status != report.StatusSkipped {
		t.Errorf("OIP-EXT-BIN-001: %s, want skipped: a server not known to support the extension need not list it", q.Status)
	}
	q, _ := run.report.Requirement("OIP-EXT-BIN-002")
	if q.Status != report.StatusFailed {
		t.Errorf("OIP-EXT-BIN-002: %s, want failed: the specs of an inconclusive extension run", q.Status)
	}
	said := false
	for _, n := range q.Notes {
		said = said || strings.Contains(n, "probe was inconclusive")
	}
	if !said {
		t.Errorf("OIP-EXT-BIN-002 notes %q do not say the probe was inconclusive", q.Notes)
	}
	for _, q := range run.report.Requirements {
		if q.Extension == string(specs.ExtBinaryTensorData) && q.Status == report.StatusNotSupported {
			t.Errorf("%s is not-supported; an inconclusive probe is no evidence of absence", q.ID)
		}
	}
	if err := run.report.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

// TestStreamWithoutSequences: a server that answers ModelStreamInfer but
// keeps no sequences (every request starts a new one, over REST and gRPC)
// and does not list "sequence", as MLServer, is not held to the sequence
// rules: the probe looks for sequence correlation itself, finds none
// (absent), and no requirement fails.
func TestStreamWithoutSequences(t *testing.T) {
	restart := func(params map[string]any) {
		if params["sequence_id"] != nil {
			params["sequence_start"] = true
		}
	}
	b := breakage{name: "stream-without-sequences",
		rest: &restHook{
			in: func(r *http.Request) {
				if !isInfer(r) || !strings.Contains(r.URL.Path, "/accumulate/") {
					return
				}
				var m map[string]any
				if json.Unmarshal(requestBody(r), &m) != nil {
					return
				}
				if p, ok := m["parameters"].(map[string]any); ok {
					restart(p)
				}
				body, _ := json.Marshal(m)
				r.Body = io.NopCloser(bytes.NewReader(body))
			},
			out: func(r *http.Request, a *answer) {
				if r.Method == http.MethodGet && r.URL.Path == "/v2" {
					editJSON(a, func(m map[string]any) {
						exts, _ := m["extensions"].([]any)
						m["extensions"] = slices.DeleteFunc(exts, func(e any) bool { return strings.HasPrefix(e.(string), "sequence") })
					})
				}
			},
		},
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if r, ok := req.(*pb.ModelInferRequest); ok && r.ModelName == "accumulate" && hasParam(r, "sequence_id") {
				r.Parameters["sequence_start"] = &pb.InferParameter{ParameterChoice: &pb.InferParameter_BoolParam{BoolParam: true}}
			}
			resp, err := h(ctx, req)
			if m, ok := resp.(*pb.ServerMetadataResponse); ok && m != nil {
				m.Extensions = slices.DeleteFunc(m.Extensions, func(e string) bool { return strings.HasPrefix(e, "sequence") })
			}
			return resp, err
		},
	}
	httpURL, grpcAddr := brokenServer(t, b)
	run := conform(t, "--http", httpURL, "--grpc", grpcAddr)
	if run.report == nil {
		t.Fatalf("no report (exit %d)\n%s", run.exit, run.output)
	}
	if e := extension(run.report, "sequence"); e.Probe != report.ProbeAbsent || e.Tested || !strings.Contains(e.Detail, "no sequence correlation") {
		t.Errorf("sequence: %+v, want probe absent (no sequence correlation), not tested", e)
	}
	if got := run.report.WithStatus(report.StatusFailed); len(got) > 0 || run.exit != 0 {
		t.Errorf("failed %v, exit %d; want none, 0: a server without sequences is not held to them\n%s", got, run.exit, failureLines(run.output))
	}
}
