package selftest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/oipkit/oipkit/conformance/report"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
	"github.com/oipkit/oipkit/verdict"
)

// Integers outside their datatype's range (OIP-REST-DATA-013,
// OIP-GRPC-INFER-012) and bodies that are not strict JSON.

func init() { breakages = append(breakages, rangeBreakages...) }

var rangeBreakages = []breakage{
	{
		// Triton's JSON reader: 300 sent as UINT8 answers 44.
		name:   "rest-wraps-out-of-range-integers",
		rest:   &restHook{in: wrapJSONIntegers},
		failed: []string{"OIP-REST-DATA-013"},
	},
	{
		name: "grpc-wraps-out-of-range-contents",
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if r, ok := req.(*pb.ModelInferRequest); ok {
				for _, in := range r.Inputs {
					c := in.GetContents()
					if c == nil {
						continue
					}
					for i, v := range c.IntContents {
						c.IntContents[i] = int32(wrapInteger(tensor.Datatype(in.Datatype), big.NewInt(int64(v))).Int64())
					}
					for i, v := range c.UintContents {
						c.UintContents[i] = uint32(wrapInteger(tensor.Datatype(in.Datatype), new(big.Int).SetUint64(uint64(v))).Uint64())
					}
				}
			}
			return h(ctx, req)
		},
		failed: []string{"OIP-GRPC-INFER-012"},
	},
	{
		// A 5xx is an error response, so the range rule holds; the server
		// fault is graded once, under OIP-REST-ERR-003.
		name: "rest-500-for-out-of-range-integers",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if isInfer(r) && a.status == http.StatusBadRequest && bytes.Contains(a.body, []byte("overflows")) {
				a.status = http.StatusInternalServerError
			}
		}},
		failed: []string{"OIP-REST-ERR-003"},
	},
	{
		name: "grpc-internal-for-out-of-range-contents",
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			resp, err := h(ctx, req)
			if s := status.Convert(err); s.Code() == codes.InvalidArgument && strings.Contains(s.Message(), "overflows") {
				return nil, status.Error(codes.Internal, s.Message())
			}
			return resp, err
		},
		// Refused, with the code the core warns about for bad input.
		warned: []string{"OIP-GRPC-ERR-002"},
	},
}

// wrapJSONIntegers rewrites every integer of a JSON inference request into
// its input's datatype as a C cast would, so that the server answers
// success with another value than the one sent.
func wrapJSONIntegers(r *http.Request) {
	if !isInfer(r) || r.Header.Get("Inference-Header-Content-Length") != "" {
		return
	}
	body := requestBody(r)
	if len(body) > 1<<20 {
		return // not the suite's range requests; re-encoding it costs the spec its time
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil {
		return
	}
	changed := false
	ins, _ := m["inputs"].([]any)
	for _, in := range ins {
		o, _ := in.(map[string]any)
		d := tensor.Datatype(fmtString(o["datatype"]))
		data, _ := o["data"].([]any)
		for i, v := range data {
			n, _ := v.(json.Number)
			x, isInt := new(big.Int).SetString(string(n), 10)
			if !isInt {
				continue
			}
			if w := wrapInteger(d, x); w.Cmp(x) != 0 {
				data[i], changed = json.Number(w.String()), true
			}
		}
	}
	if !changed {
		return
	}
	body, _ = json.Marshal(m)
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
}

func fmtString(v any) string {
	s, _ := v.(string)
	return s
}

// wrapInteger is x reduced modulo 2^bits into integer datatype d's range
// (two's complement for the signed types); x itself for other datatypes.
func wrapInteger(d tensor.Datatype, x *big.Int) *big.Int {
	signed := slices.Contains([]tensor.Datatype{tensor.Int8, tensor.Int16, tensor.Int32, tensor.Int64}, d)
	if !signed && !slices.Contains([]tensor.Datatype{tensor.Uint8, tensor.Uint16, tensor.Uint32, tensor.Uint64}, d) {
		return x
	}
	bits := uint(8 * d.Size())
	mod := new(big.Int).Lsh(big.NewInt(1), bits)
	v := new(big.Int).Mod(x, mod) // Euclidean: 0 ≤ v < 2^bits
	if signed && v.Cmp(new(big.Int).Rsh(mod, 1)) >= 0 {
		v.Sub(v, mod)
	}
	return v
}

// TestBareNaNIsAWarning: a server that writes NaN and infinities as bare
// tokens in its JSON inference answers (Python's json does) gets exactly one
// warning, under OIP-REST-RESP-001 citing A-22, though the specs that send
// NaN tolerate what comes back; --strict fails it.
func TestBareNaNIsAWarning(t *testing.T) {
	b := breakage{name: "rest-bare-nan-in-answers", rest: &restHook{out: func(r *http.Request, a *answer) {
		if isInfer(r) && a.status == http.StatusOK && a.header.Get("Inference-Header-Content-Length") == "" {
			for _, tok := range []string{"NaN", "Infinity", "-Infinity"} {
				a.body = bytes.ReplaceAll(a.body, []byte(`"`+tok+`"`), []byte(tok))
			}
		}
	}}}
	httpURL, grpcAddr := brokenServer(t, b)
	run := conform(t, "--http", httpURL, "--grpc", grpcAddr)
	if run.report == nil || run.exit != 0 {
		t.Fatalf("exit %d, want 0 (a warning does not fail)\n%s", run.exit, lastLines(run.output, 30))
	}
	if got := run.report.WithStatus(report.StatusFailed); len(got) > 0 {
		t.Errorf("failed %v, want none\n%s", got, failureLines(run.output))
	}
	if got := run.report.WithStatus(report.StatusWarning); !slices.Equal(got, []string{"OIP-REST-RESP-001"}) {
		t.Errorf("warnings %v, want [OIP-REST-RESP-001]\n%s", got, failureLines(run.output))
	}
	for _, q := range run.report.Requirements {
		if q.ID != "OIP-REST-RESP-001" {
			continue
		}
		if len(q.Findings) != 1 || q.Findings[0].Ambiguity != "A-22" || !strings.Contains(q.Findings[0].Message, "bare NaN") {
			t.Errorf("OIP-REST-RESP-001 findings %+v, want one warning citing A-22 about bare NaN", q.Findings)
		}
	}
	checkEvidence(t, run)

	strict := conform(t, "--http", httpURL, "--grpc", grpcAddr, "--strict")
	if strict.exit != 3 || strict.report == nil {
		t.Fatalf("--strict: exit %d, want 3\n%s", strict.exit, lastLines(strict.output, 30))
	}
	if v := verdicts(strict.report)["OIP-REST-CORE"]; v != verdict.Failed {
		t.Errorf("--strict: OIP-REST-CORE %s, want fail", v)
	}
}
