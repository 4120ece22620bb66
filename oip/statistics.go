package oip

import (
	"maps"
	"slices"

	"github.com/oipkit/oipkit/specs/inferencepb"
)

// Messages of the statistics extension (Triton's "statistics"): the REST
// JSON of GET /v2/models[/{m}[/versions/{v}]]/stats and its gRPC twin
// ModelStatistics. Field names and units are Triton's: durations are
// cumulative nanoseconds, last_inference is milliseconds since the epoch.

// StatisticsResponse is {"model_stats": [...]}.
type StatisticsResponse struct {
	ModelStats []ModelStatistics `json:"model_stats"`
}

// ModelStatistics is the cumulative statistics of one model version.
type ModelStatistics struct {
	Name           string                        `json:"name"`
	Version        string                        `json:"version"`
	LastInference  uint64                        `json:"last_inference"`
	InferenceCount uint64                        `json:"inference_count"`
	ExecutionCount uint64                        `json:"execution_count"`
	InferenceStats InferStatistics               `json:"inference_stats"`
	BatchStats     []BatchStatistics             `json:"batch_stats"`
	ResponseStats  map[string]ResponseStatistics `json:"response_stats,omitempty"`
	MemoryUsage    []MemoryUsage                 `json:"memory_usage,omitempty"`
}

// Duration is a $duration_stat: how many times and for how long in total.
type Duration struct {
	Count uint64 `json:"count"`
	NS    uint64 `json:"ns"`
}

// InferStatistics is inference_stats.
type InferStatistics struct {
	Success       Duration `json:"success"`
	Fail          Duration `json:"fail"`
	Queue         Duration `json:"queue"`
	ComputeInput  Duration `json:"compute_input"`
	ComputeInfer  Duration `json:"compute_infer"`
	ComputeOutput Duration `json:"compute_output"`
	CacheHit      Duration `json:"cache_hit"`
	CacheMiss     Duration `json:"cache_miss"`
}

// BatchStatistics is one entry of batch_stats: the executions of one batch
// size.
type BatchStatistics struct {
	BatchSize     uint64   `json:"batch_size"`
	ComputeInput  Duration `json:"compute_input"`
	ComputeInfer  Duration `json:"compute_infer"`
	ComputeOutput Duration `json:"compute_output"`
}

// ResponseStatistics is one value of response_stats (decoupled models).
type ResponseStatistics struct {
	ComputeInfer  Duration `json:"compute_infer"`
	ComputeOutput Duration `json:"compute_output"`
	Success       Duration `json:"success"`
	Fail          Duration `json:"fail"`
	EmptyResponse Duration `json:"empty_response"`
	Cancel        Duration `json:"cancel"`
}

// MemoryUsage is one entry of memory_usage.
type MemoryUsage struct {
	Type     string `json:"type"`
	ID       int64  `json:"id"`
	ByteSize uint64 `json:"byte_size"`
}

func durationToProto(d Duration) *inferencepb.StatisticDuration {
	return &inferencepb.StatisticDuration{Count: d.Count, Ns: d.NS}
}

func durationFromProto(d *inferencepb.StatisticDuration) Duration {
	return Duration{Count: d.GetCount(), NS: d.GetNs()}
}

// StatisticsToProto converts statistics to a ModelStatisticsResponse.
func StatisticsToProto(r *StatisticsResponse) *inferencepb.ModelStatisticsResponse {
	out := &inferencepb.ModelStatisticsResponse{}
	if r == nil {
		return out
	}
	for _, m := range r.ModelStats {
		s := m.InferenceStats
		pm := &inferencepb.ModelStatistics{
			Name:           m.Name,
			Version:        m.Version,
			LastInference:  m.LastInference,
			InferenceCount: m.InferenceCount,
			ExecutionCount: m.ExecutionCount,
			InferenceStats: &inferencepb.InferStatistics{
				Success:       durationToProto(s.Success),
				Fail:          durationToProto(s.Fail),
				Queue:         durationToProto(s.Queue),
				ComputeInput:  durationToProto(s.ComputeInput),
				ComputeInfer:  durationToProto(s.ComputeInfer),
				ComputeOutput: durationToProto(s.ComputeOutput),
				CacheHit:      durationToProto(s.CacheHit),
				CacheMiss:     durationToProto(s.CacheMiss),
			},
		}
		for _, b := range m.BatchStats {
			pm.BatchStats = append(pm.BatchStats, &inferencepb.InferBatchStatistics{
				BatchSize:     b.BatchSize,
				ComputeInput:  durationToProto(b.ComputeInput),
				ComputeInfer:  durationToProto(b.ComputeInfer),
				ComputeOutput: durationToProto(b.ComputeOutput),
			})
		}
		for _, u := range m.MemoryUsage {
			pm.MemoryUsage = append(pm.MemoryUsage, &inferencepb.MemoryUsage{Type: u.Type, Id: u.ID, ByteSize: u.ByteSize})
		}
		for k, v := range m.ResponseStats {
			if pm.ResponseStats == nil {
				pm.ResponseStats = map[string]*inferencepb.InferResponseStatistics{}
			}
			pm.ResponseStats[k] = &inferencepb.InferResponseStatistics{
				ComputeInfer:  durationToProto(v.ComputeInfer),
				ComputeOutput: durationToProto(v.ComputeOutput),
				Success:       durationToProto(v.Success),
				Fail:          durationToProto(v.Fail),
				EmptyResponse: durationToProto(v.EmptyResponse),
				Cancel:        durationToProto(v.Cancel),
			}
		}
		out.ModelStats = append(out.ModelStats, pm)
	}
	return out
}

// StatisticsFromProto converts a ModelStatisticsResponse. ModelStats and
// every BatchStats are never nil, so that they encode as JSON arrays.
func StatisticsFromProto(pb *inferencepb.ModelStatisticsResponse) *StatisticsResponse {
	out := &StatisticsResponse{ModelStats: []ModelStatistics{}}
	for _, pm := range pb.GetModelStats() {
		s := pm.GetInferenceStats()
		m := ModelStatistics{
			Name:           pm.GetName(),
			Version:        pm.GetVersion(),
			LastInference:  pm.GetLastInference(),
			InferenceCount: pm.GetInferenceCount(),
			ExecutionCount: pm.GetExecutionCount(),
			InferenceStats: InferStatistics{
				Success:       durationFromProto(s.GetSuccess()),
				Fail:          durationFromProto(s.GetFail()),
				Queue:         durationFromProto(s.GetQueue()),
				ComputeInput:  durationFromProto(s.GetComputeInput()),
				ComputeInfer:  durationFromProto(s.GetComputeInfer()),
				ComputeOutput: durationFromProto(s.GetComputeOutput()),
				CacheHit:      durationFromProto(s.GetCacheHit()),
				CacheMiss:     durationFromProto(s.GetCacheMiss()),
			},
			BatchStats: []BatchStatistics{},
		}
		for _, b := range pm.GetBatchStats() {
			m.BatchStats = append(m.BatchStats, BatchStatistics{
				BatchSize:     b.GetBatchSize(),
				ComputeInput:  durationFromProto(b.GetComputeInput()),
				ComputeInfer:  durationFromProto(b.GetComputeInfer()),
				ComputeOutput: durationFromProto(b.GetComputeOutput()),
			})
		}
		for _, u := range pm.GetMemoryUsage() {
			m.MemoryUsage = append(m.MemoryUsage, MemoryUsage{Type: u.GetType(), ID: u.GetId(), ByteSize: u.GetByteSize()})
		}
		for _, k := range slices.Sorted(maps.Keys(pm.GetResponseStats())) {
			v := pm.GetResponseStats()[k]
			if m.ResponseStats == nil {
				m.ResponseStats = map[string]ResponseStatistics{}
			}
			m.ResponseStats[k] = ResponseStatistics{
				ComputeInfer:  durationFromProto(v.GetComputeInfer()),
				ComputeOutput: durationFromProto(v.GetComputeOutput()),
				Success:       durationFromProto(v.GetSuccess()),
				Fail:          durationFromProto(v.GetFail()),
				EmptyResponse: durationFromProto(v.GetEmptyResponse()),
				Cancel:        durationFromProto(v.GetCancel()),
			}
		}
		out.ModelStats = append(out.ModelStats, m)
	}
	return out
}
