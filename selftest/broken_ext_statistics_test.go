package selftest

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/grpc"

	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// Servers whose statistics extension is broken in one way each.

func init() { breakages = append(breakages, statisticsBreakages...) }

// ModelStatistics is the statistics extension, which the reference server
// advertises.
func (f forward) ModelStatistics(ctx context.Context, r *pb.ModelStatisticsRequest) (*pb.ModelStatisticsResponse, error) {
	return f.up.ModelStatistics(ctx, r)
}

func isStats(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/stats")
}

// eachModelStat edits every model_stats entry of a statistics answer.
func eachModelStat(a *answer, edit func(m map[string]any)) {
	editJSON(a, func(m map[string]any) {
		list, _ := m["model_stats"].([]any)
		for _, e := range list {
			if em, ok := e.(map[string]any); ok {
				edit(em)
			}
		}
	})
}

// onStatistics returns an interceptor that edits successful ModelStatistics
// answers.
func onStatistics(edit func(*pb.ModelStatisticsRequest, *pb.ModelStatisticsResponse)) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		resp, err := h(ctx, req)
		if r, ok := resp.(*pb.ModelStatisticsResponse); ok && err == nil {
			edit(req.(*pb.ModelStatisticsRequest), r)
		}
		return resp, err
	}
}

var statisticsBreakages = []breakage{
	{
		name: "rest-stats-not-advertised",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if r.URL.Path == "/v2" {
				editJSON(a, func(m map[string]any) {
					exts, _ := m["extensions"].([]any)
					m["extensions"] = slices.DeleteFunc(exts, func(e any) bool { return e == "statistics" })
				})
			}
		}},
		// The probe still observes the extension, so its specs run.
		failed: []string{"OIP-EXT-STAT-001"},
	},
	{
		name: "rest-stats-version-route-ignores-version",
		rest: &restHook{in: func(r *http.Request) {
			if isStats(r) && strings.Contains(r.URL.Path, "/versions/") {
				r.URL.Path = r.URL.Path[:strings.Index(r.URL.Path, "/versions/")] + "/stats"
				r.URL.RawPath = ""
			}
		}},
		failed: []string{"OIP-EXT-STAT-002"},
	},
	{
		name: "rest-stats-no-compute-infer",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if isStats(r) && a.status == 200 {
				eachModelStat(a, func(m map[string]any) {
					if is, ok := m["inference_stats"].(map[string]any); ok {
						delete(is, "compute_infer")
					}
				})
			}
		}},
		failed: []string{"OIP-EXT-STAT-004"},
	},
	{
		name: "rest-stats-inference-count-frozen",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if isStats(r) && a.status == 200 {
				eachModelStat(a, func(m map[string]any) { m["inference_count"] = 0 })
			}
		}},
		failed: []string{"OIP-EXT-STAT-005"},
	},
	{
		name: "rest-stats-last-inference-in-seconds",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if isStats(r) && a.status == 200 {
				eachModelStat(a, func(m map[string]any) {
					if n, ok := m["last_inference"].(json.Number); ok {
						ms, _ := strconv.ParseInt(string(n), 10, 64)
						m["last_inference"] = ms / 1000
					}
				})
			}
		}},
		failed: []string{"OIP-EXT-STAT-007"},
	},
	{
		name: "rest-stats-success-count-goes-down",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if isStats(r) && a.status == 200 {
				eachModelStat(a, func(m map[string]any) {
					if is, ok := m["inference_stats"].(map[string]any); ok {
						is["success"] = map[string]any{"count": 0, "ns": 0}
					}
				})
			}
		}},
		// The requirement is implied by the catalog, so a warning.
		warned: []string{"OIP-EXT-STAT-008"},
	},
	{
		name: "rest-stats-200-for-unknown-model",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if r.URL.Path == "/v2/models/does_not_exist/stats" {
				a.status, a.body = 200, []byte(`{"model_stats":[]}`)
				a.header.Set("Content-Type", "application/json")
			}
		}},
		failed: []string{"OIP-EXT-STAT-011"},
	},
	{
		name: "grpc-stats-ignores-name",
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if r, ok := req.(*pb.ModelStatisticsRequest); ok && r.GetName() != "does_not_exist" {
				req = &pb.ModelStatisticsRequest{}
			}
			return h(ctx, req)
		},
		failed: []string{"OIP-EXT-STAT-012"},
	},
	{
		// Every inference counted twice, over both transports.
		name: "stats-count-two-per-inference",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if isStats(r) && a.status == 200 {
				eachModelStat(a, func(m map[string]any) {
					if n, ok := m["inference_count"].(json.Number); ok {
						k, _ := strconv.ParseInt(string(n), 10, 64)
						m["inference_count"] = 2 * k
					}
				})
			}
		}},
		grpc: onStatistics(func(_ *pb.ModelStatisticsRequest, r *pb.ModelStatisticsResponse) {
			for _, m := range r.GetModelStats() {
				m.InferenceCount *= 2
			}
		}),
		failed: []string{"OIP-EXT-STAT-005"},
	},
	{
		// Another client's inferences, as a count that grows by one at
		// every read of add_sub's statistics: an excess not proportional
		// to the suite's inferences is a warning, never a failure.
		name: "rest-stats-other-client-traffic",
		rest: func() *restHook {
			var mu sync.Mutex
			reads := int64(0)
			return &restHook{out: func(r *http.Request, a *answer) {
				if r.URL.Path == "/v2/models/add_sub/stats" && a.status == 200 {
					mu.Lock()
					reads++
					extra := reads
					mu.Unlock()
					eachModelStat(a, func(m map[string]any) {
						if n, ok := m["inference_count"].(json.Number); ok {
							k, _ := strconv.ParseInt(string(n), 10, 64)
							m["inference_count"] = k + extra
						}
					})
				}
			}}
		}(),
		warned: []string{"OIP-EXT-STAT-005"},
	},
	{
		// Durations in microseconds where nanoseconds are due.
		name: "rest-stats-durations-in-microseconds",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if isStats(r) && a.status == 200 {
				eachModelStat(a, func(m map[string]any) {
					is, _ := m["inference_stats"].(map[string]any)
					for _, k := range []string{"success", "compute_infer"} {
						if d, ok := is[k].(map[string]any); ok {
							if n, ok := d["ns"].(json.Number); ok {
								ns, _ := strconv.ParseInt(string(n), 10, 64)
								d["ns"] = ns / 1000
							}
						}
					}
				})
			}
		}},
		failed: []string{"OIP-EXT-STAT-013"},
	},
	{
		// A model's route answers the statistics of its first version only.
		name: "rest-stats-one-version-only",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if r.URL.Path == "/v2/models/versioned/stats" && a.status == 200 {
				editJSON(a, func(m map[string]any) {
					list, _ := m["model_stats"].([]any)
					if len(list) > 1 {
						m["model_stats"] = list[:1]
					}
				})
			}
		}},
		failed: []string{"OIP-EXT-STAT-002"},
	},
	{
		// ModelStatistics of a model answers its first version only.
		name: "grpc-stats-one-version-only",
		grpc: onStatistics(func(q *pb.ModelStatisticsRequest, r *pb.ModelStatisticsResponse) {
			if q.GetName() == "versioned" && len(r.ModelStats) > 1 {
				r.ModelStats = r.ModelStats[:1]
			}
		}),
		failed: []string{"OIP-EXT-STAT-012"},
	},
	{
		name: "grpc-stats-execution-count-frozen",
		grpc: onStatistics(func(_ *pb.ModelStatisticsRequest, r *pb.ModelStatisticsResponse) {
			for _, m := range r.GetModelStats() {
				m.ExecutionCount = 0
			}
		}),
		failed: []string{"OIP-EXT-STAT-006"},
	},
}
