package reference

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

// The statistics extension (Triton's): cumulative per model version
// counters of inference requests, read over REST (GET /v2/models/stats,
// /v2/models/{m}/stats, /v2/models/{m}/versions/{v}/stats) and gRPC
// (ModelStatistics).
//
// What is counted, and how it agrees with /metrics: a request is counted
// once its model version is resolved. success counts the unary requests
// answered 200/OK, which are exactly oip_requests_total{code="200"|"OK"}
// of the model (plus the streamed requests below, which that family does
// not count; nv_inference_request_success counts both, from these
// counters); fail counts the others (undecodable or invalid requests, model
// errors). success.ns is the time from validation to the outputs; it splits
// into compute_input (validating the inputs against the metadata),
// compute_infer (running the model) and compute_output (checking and
// ordering the outputs). Requests run on their handler's goroutine, so queue
// time is 0, unless the model has a limited number of execution instances
// (instances.go): then it is the wait for a free one, counted in success.ns
// too. Models do not batch (max_batch_size 0 in their configuration),
// so each success is one execution of batch size 1 and counts once in
// inference_count. There is no response cache: cache_hit and cache_miss
// stay 0.
//
// Streamed requests: a non-decoupled model on ModelStreamInfer counts as
// above. A request to a decoupled model (ModelStreamInfer, REST generate
// and generate_stream) counts from its receipt (when gRPC's Recv returned
// it, or when the HTTP handler started) to its last response: compute_input
// is the receipt to validated inputs, compute_infer the model's whole run
// with its responses sent as they come, compute_output the final marker.
// Its time to first response and the gaps between its responses go to
// /metrics (nv_inference_first_response_histogram_ms,
// oip_inference_inter_response_histogram_ms); each response is timed once
// written to the transport (gRPC Send returned, the SSE event flushed), so
// that both transports stop the clock at the same point.

var extStatistics = extension{
	name:       specs.ExtStatistics,
	advertised: true,
	rest: []extRoute{
		{method: http.MethodGet, path: "/v2/models/stats", serve: (*Server).serveStatistics},
		{method: http.MethodGet, path: "/v2/models/{m}/stats", serve: (*Server).serveStatistics},
		{method: http.MethodGet, path: "/v2/models/{m}/versions/{v}/stats", serve: (*Server).serveStatistics},
	},
	grpc: []string{"ModelStatistics"},
}

// durationStat is a $duration_stat kept with atomics.
type durationStat struct{ count, ns atomic.Uint64 }

func (d *durationStat) add(ns time.Duration) {
	d.count.Add(1)
	d.ns.Add(uint64(max(ns, 0)))
}

func (d *durationStat) load() oip.Duration {
	return oip.Duration{Count: d.count.Load(), NS: d.ns.Load()}
}

// versionStats are the counters of one model version. Every field is an
// atomic, so recording takes no lock and allocates nothing.
type versionStats struct {
	lastInference  atomic.Int64 // milliseconds since the epoch
	inferenceCount atomic.Uint64
	executionCount atomic.Uint64
	success, fail  durationStat
	queue          durationStat
	computeInput   durationStat
	computeInfer   durationStat
	computeOutput  durationStat

	// Streamed requests of decoupled models (exported on /metrics only,
	// the statistics extension has no field for them): the time from
	// receiving the request to its first response, and every gap between
	// two consecutive responses of one request.
	firstResponse histogram // streamBuckets
	interResponse histogram // streamBuckets
}

// responseTimer times the responses of one streamed request of a decoupled
// model: the first from the request's receipt, each later one from the
// previous. One goroutine owns it.
type responseTimer struct {
	st          *versionStats
	start, last time.Time
	n           int
}

func (v *versionStats) responseTimer(received time.Time) responseTimer {
	return responseTimer{st: v, start: received}
}

// responded records a response handed to the transport now.
func (t *responseTimer) responded() {
	now := time.Now()
	if t.n == 0 {
		t.st.firstResponse.observe(streamBuckets, now.Sub(t.start))
	} else {
		t.st.interResponse.observe(streamBuckets, now.Sub(t.last))
	}
	t.last = now
	t.n++
}

// succeeded records a request that ran: arrived at start, waited queued
// for an execution instance, validated until inputDone, model run until
// inferDone, outputs ready at end.
func (v *versionStats) succeeded(start time.Time, queued time.Duration, inputDone, inferDone, end time.Time) {
	v.success.add(end.Sub(start))
	v.queue.add(queued)
	v.computeInput.add(inputDone.Sub(start.Add(queued)))
	v.computeInfer.add(inferDone.Sub(inputDone))
	v.computeOutput.add(end.Sub(inferDone))
	v.inferenceCount.Add(1)
	v.executionCount.Add(1)
	v.lastInference.Store(end.UnixMilli())
}

// failed records a request for this version that failed after d.
func (v *versionStats) failed(d time.Duration) {
	v.fail.add(d)
	v.lastInference.Store(time.Now().UnixMilli())
}

func (v *versionStats) snapshot(name, version string) oip.ModelStatistics {
	m := oip.ModelStatistics{
		Name:           name,
		Version:        version,
		LastInference:  uint64(max(v.lastInference.Load(), 0)),
		InferenceCount: v.inferenceCount.Load(),
		ExecutionCount: v.executionCount.Load(),
		InferenceStats: oip.InferStatistics{
			Success:       v.success.load(),
			Fail:          v.fail.load(),
			Queue:         v.queue.load(),
			ComputeInput:  v.computeInput.load(),
			ComputeInfer:  v.computeInfer.load(),
			ComputeOutput: v.computeOutput.load(),
		},
		BatchStats: []oip.BatchStatistics{},
	}
	if n := m.ExecutionCount; n > 0 {
		// Every execution has batch size 1 (see above).
		m.BatchStats = append(m.BatchStats, oip.BatchStatistics{
			BatchSize:     1,
			ComputeInput:  m.InferenceStats.ComputeInput,
			ComputeInfer:  m.InferenceStats.ComputeInfer,
			ComputeOutput: m.InferenceStats.ComputeOutput,
		})
	}
	return m
}

type statsKey struct{ model, version string }

// statistics holds the counters of every model version that was asked for.
// Entries are created only for versions the repository resolved, so
// clients cannot grow it with made-up names.
type statistics struct {
	mu        sync.RWMutex
	byVersion map[statsKey]*versionStats
}

func newStatistics() *statistics {
	return &statistics{byVersion: make(map[statsKey]*versionStats)}
}

// of returns the counters of a resolved model version.
func (st *statistics) of(model, version string) *versionStats {
	k := statsKey{model, version}
	st.mu.RLock()
	v := st.byVersion[k]
	st.mu.RUnlock()
	if v != nil {
		return v
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if v = st.byVersion[k]; v == nil {
		v = new(versionStats)
		st.byVersion[k] = v
	}
	return v
}

// collect answers a statistics request: every loaded version of every model
// (name ""), of one model (version ""), or one version. Errors wrap
// model.ErrNotFound.
func (s *Server) collectStatistics(name, version string) (*oip.StatisticsResponse, error) {
	out := &oip.StatisticsResponse{ModelStats: []oip.ModelStatistics{}}
	names := []string{name}
	if name == "" {
		names = s.repo.Names()
	}
	for _, n := range names {
		versions := []string{version}
		if version == "" {
			versions = s.repo.Versions(n)
		}
		if name != "" {
			// Check that the model (and version) exists.
			if _, _, err := s.repo.Lookup(n, version); err != nil {
				return nil, err
			}
		}
		for _, v := range versions {
			out.ModelStats = append(out.ModelStats, s.stats.of(n, v).snapshot(n, v))
		}
	}
	return out, nil
}

// serveStatistics answers GET /v2/models[/{m}[/versions/{v}]]/stats.
func (s *Server) serveStatistics(w *statusWriter, _ *http.Request, p routeParams) {
	resp, err := s.collectStatistics(p.model, p.version)
	if err != nil {
		writeError(w, httpStatus(err), err.Error())
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

func (g *grpcService) ModelStatistics(_ context.Context, req *inferencepb.ModelStatisticsRequest) (*inferencepb.ModelStatisticsResponse, error) {
	if req.GetName() == "" && req.GetVersion() != "" {
		return nil, toStatus(invalidf("a version (%q) needs a model name", req.GetVersion()))
	}
	resp, err := g.s.collectStatistics(req.GetName(), req.GetVersion())
	if err != nil {
		return nil, toStatus(err)
	}
	return oip.StatisticsToProto(resp), nil
}
