package reference_test

import (
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference/referencetest"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

// statsOf reads the REST statistics of one model version.
func statsOf(t *testing.T, base, model, version string) oip.ModelStatistics {
	t.Helper()
	var r oip.StatisticsResponse
	wantJSON(t, get(t, base+"/v2/models/"+model+"/versions/"+version+"/stats"), http.StatusOK, &r)
	if len(r.ModelStats) != 1 || r.ModelStats[0].Name != model || r.ModelStats[0].Version != version {
		t.Fatalf("statistics of %s/%s: %+v", model, version, r.ModelStats)
	}
	return r.ModelStats[0]
}

// metricCount sums oip_requests_total of a model over the given codes.
func metricCount(t *testing.T, base, model string, codes ...string) uint64 {
	t.Helper()
	body := string(get(t, base+"/metrics").body)
	var n uint64
	for _, c := range codes {
		re := regexp.MustCompile(`oip_requests_total\{model="` + model + `",protocol="[a-z]+",code="` + c + `"\} (\d+)`)
		for _, m := range re.FindAllStringSubmatch(body, -1) {
			v, _ := strconv.ParseUint(m[1], 10, 64)
			n += v
		}
	}
	return n
}

// The counters follow the requests over both transports and agree with
// /metrics; the durations add up.
func TestStatisticsCounters(t *testing.T) {
	srv := referencetest.Start(t)
	base := srv.HTTPURL()
	c := dial(t, srv.GRPCAddr())
	s0 := statsOf(t, base, "add_sub", "1")
	if s0.InferenceCount != 0 || s0.LastInference != 0 || len(s0.BatchStats) != 0 {
		t.Fatalf("fresh statistics: %+v", s0)
	}
	start := time.Now().UnixMilli()
	for range 3 {
		if _, r := inferREST(t, base, addSubRequest(), oip.RESTEncoding{}); r.status != http.StatusOK {
			t.Fatalf("infer: %d %s", r.status, r.body)
		}
	}
	pb, err := oip.ToProtoRequest(addSubRequest(), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ModelInfer(ctxT(t), pb); err != nil {
		t.Fatal(err)
	}
	// Failures: an undecodable body, an input of the wrong shape (REST), a
	// missing input (gRPC).
	post(t, base+inferPath("add_sub", ""), "{")
	post(t, base+inferPath("add_sub", ""), `{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1],"data":[1]}]}`)
	pb.Inputs = pb.Inputs[:1]
	_, err = c.ModelInfer(ctxT(t), pb)
	wantCode(t, err, codes.InvalidArgument)

	s := statsOf(t, base, "add_sub", "1")
	is := s.InferenceStats
	if s.InferenceCount != 4 || s.ExecutionCount != 4 || is.Success.Count != 4 || is.Fail.Count != 3 {
		t.Errorf("after 4 successes and 3 failures: inference %d, execution %d, success %d, fail %d",
			s.InferenceCount, s.ExecutionCount, is.Success.Count, is.Fail.Count)
	}
	if is.Queue.Count != 4 || is.ComputeInput.Count != 4 || is.ComputeInfer.Count != 4 || is.ComputeOutput.Count != 4 {
		t.Errorf("breakdown counts: %+v, want 4 each", is)
	}
	if sum := is.ComputeInput.NS + is.ComputeInfer.NS + is.ComputeOutput.NS + is.Queue.NS; sum > is.Success.NS || is.Success.NS == 0 {
		t.Errorf("breakdown %d ns does not fit within success %d ns", sum, is.Success.NS)
	}
	if s.LastInference < uint64(start) || s.LastInference > uint64(time.Now().UnixMilli()) {
		t.Errorf("last_inference %d, want between %d and now", s.LastInference, start)
	}
	if len(s.BatchStats) != 1 || s.BatchStats[0].BatchSize != 1 || s.BatchStats[0].ComputeInfer.Count != 4 {
		t.Errorf("batch_stats %+v, want one entry of batch size 1 with 4 executions", s.BatchStats)
	}
	if m := metricCount(t, base, "add_sub", "200", "OK"); m != is.Success.Count {
		t.Errorf("/metrics counts %d successful add_sub requests, statistics %d", m, is.Success.Count)
	}
	if m := metricCount(t, base, "add_sub", "400", "INVALID_ARGUMENT"); m != is.Fail.Count {
		t.Errorf("/metrics counts %d failed add_sub requests, statistics %d", m, is.Fail.Count)
	}

	// gRPC answers the same counters.
	g, err := c.ModelStatistics(ctxT(t), &inferencepb.ModelStatisticsRequest{Name: "add_sub", Version: "1"})
	if err != nil || len(g.GetModelStats()) != 1 || g.GetModelStats()[0].GetInferenceCount() != 4 ||
		g.GetModelStats()[0].GetInferenceStats().GetFail().GetCount() != 3 {
		t.Errorf("gRPC statistics of add_sub/1: %v, %v", g, err)
	}
}

// Every route and RPC filters as documented; unknown models and versions
// are errors.
func TestStatisticsRoutes(t *testing.T) {
	srv := referencetest.Start(t)
	base := srv.HTTPURL()
	var all, model, version oip.StatisticsResponse
	wantJSON(t, get(t, base+"/v2/models/stats"), http.StatusOK, &all)
	wantJSON(t, get(t, base+"/v2/models/versioned/stats"), http.StatusOK, &model)
	wantJSON(t, get(t, base+"/v2/models/versioned/versions/1/stats"), http.StatusOK, &version)
	if n := len(srv.Repository().Names()); len(all.ModelStats) < n {
		t.Errorf("/v2/models/stats lists %d versions for %d models", len(all.ModelStats), n)
	}
	if len(model.ModelStats) != 2 || model.ModelStats[0].Name != "versioned" || model.ModelStats[1].Name != "versioned" {
		t.Errorf("/v2/models/versioned/stats: %+v", model.ModelStats)
	}
	if len(version.ModelStats) != 1 || version.ModelStats[0].Version != "1" {
		t.Errorf("/v2/models/versioned/versions/1/stats: %+v", version.ModelStats)
	}
	wantError(t, get(t, base+"/v2/models/does_not_exist/stats"), http.StatusNotFound, "does_not_exist")
	wantError(t, get(t, base+"/v2/models/versioned/versions/9/stats"), http.StatusNotFound)
	r := post(t, base+"/v2/models/stats", "{}")
	wantError(t, r, http.StatusMethodNotAllowed)
	if a := r.header.Get("Allow"); a != "GET, HEAD" {
		t.Errorf("Allow %q, want \"GET, HEAD\"", a)
	}

	c := dial(t, srv.GRPCAddr())
	g, err := c.ModelStatistics(ctxT(t), &inferencepb.ModelStatisticsRequest{})
	if err != nil || len(g.GetModelStats()) != len(all.ModelStats) {
		t.Errorf("ModelStatistics{}: %d entries, %v; REST lists %d", len(g.GetModelStats()), err, len(all.ModelStats))
	}
	g, err = c.ModelStatistics(ctxT(t), &inferencepb.ModelStatisticsRequest{Name: "versioned"})
	if err != nil || len(g.GetModelStats()) != 2 {
		t.Errorf("ModelStatistics{versioned}: %v, %v", g, err)
	}
	_, err = c.ModelStatistics(ctxT(t), &inferencepb.ModelStatisticsRequest{Name: "does_not_exist"})
	wantCode(t, err, codes.NotFound, "does_not_exist")
	_, err = c.ModelStatistics(ctxT(t), &inferencepb.ModelStatisticsRequest{Version: "1"})
	wantCode(t, err, codes.InvalidArgument)
}
