package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega/types"

	. "github.com/oipkit/oipkit/conformance/engine"
	"github.com/oipkit/oipkit/specs"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// OIP-EXT-STAT: the statistics extension (Triton's): cumulative per model
// version counters, GET /v2/models[/{m}[/versions/{v}]]/stats over REST and
// ModelStatistics over gRPC.
//
// Counters are compared before and after one request of batch size 1
// (add_sub with a [1, 16] input), which counts as one inference and one
// execution whether or not the server batches. The suite runs its specs one
// at a time, so nothing else moves the counters between the two reads.

// The probe asks for add_sub's statistics over REST, then over gRPC.
var _ = RegisterProbe(specs.ExtStatistics, func(ctx context.Context, p *Prober) ProbeResult {
	if !p.Deployed("add_sub") {
		return Inconclusive(nil, "fixture add_sub is not deployed")
	}
	return p.RESTThenGRPC(ctx, func(ctx context.Context) ProbeResult {
		e := p.Get(ctx, "/v2/models/add_sub/stats")
		switch {
		case e.Err != nil:
			return Unanswered()
		case statsOfErr(e, "add_sub") == nil:
			return Observed(e, "GET /v2/models/add_sub/stats answered add_sub's statistics")
		}
		return Absent(e, "GET /v2/models/add_sub/stats: %s", clipped(e.Got(), 160))
	}, func(ctx context.Context) ProbeResult {
		resp := &pb.ModelStatisticsResponse{}
		c := p.Call(ctx, "ModelStatistics", &pb.ModelStatisticsRequest{Name: "add_sub"}, resp)
		switch {
		case GRPCNoAnswer(c.Err) != nil:
			return Unanswered()
		case c.Err == nil && len(resp.GetModelStats()) > 0 && resp.GetModelStats()[0].GetName() == "add_sub":
			return Observed(c, "ModelStatistics answered add_sub's statistics")
		}
		return Absent(c, "ModelStatistics{add_sub}: %s", clipped(c.Got(), 160))
	}, "no answer to the statistics of add_sub")
})

// statsOfErr checks that a statistics answer is a 200 {"model_stats": [...]}
// whose entries all name model (any model when model is "").
func statsOfErr(e *Exchange, model string) error {
	_, err := statEntries(e, model)
	return err
}

// statEntries reads the model_stats of a 200 answer as raw objects, and
// checks that every entry names model (unless model is "").
func statEntries(e *Exchange, model string) ([]map[string]json.RawMessage, error) {
	if e.Status != http.StatusOK {
		return nil, fmt.Errorf("%s: %s, want 200", e.What(), e.Got())
	}
	m, err := DecodeObject(e.Body)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", e.What(), err)
	}
	var entries []map[string]json.RawMessage
	if err := json.Unmarshal(m["model_stats"], &entries); err != nil || entries == nil {
		return nil, fmt.Errorf(`"model_stats" is %s, want an array of objects`, clipped(string(m["model_stats"]), 120))
	}
	for i, s := range entries {
		name, err := StringField(s, "name")
		if err != nil {
			return nil, fmt.Errorf("model_stats[%d]: %v", i, err)
		}
		if model != "" && name != model {
			return nil, fmt.Errorf("model_stats[%d] is of %q; %s asks for %q only", i, name, e.What(), model)
		}
	}
	return entries, nil
}

// countField reads a non-negative integer member.
func countField(m map[string]json.RawMessage, key string) (uint64, error) {
	raw, ok := m[key]
	if !ok {
		return 0, fmt.Errorf("%q is missing", key)
	}
	var n uint64
	d := json.NewDecoder(bytes.NewReader(raw))
	if err := d.Decode(&n); err != nil {
		return 0, fmt.Errorf("%q is %s, want a non-negative integer", key, clipped(string(raw), 60))
	}
	return n, nil
}

// durationStatErr checks a $duration_stat {"count", "ns"}.
func durationStatErr(m map[string]json.RawMessage, key string) error {
	raw, ok := m[key]
	if !ok {
		return fmt.Errorf("%q is missing", key)
	}
	d, err := DecodeObject(raw)
	if err != nil {
		return fmt.Errorf("%q: %v", key, err)
	}
	var list []error
	for _, k := range []string{"count", "ns"} {
		if _, err := countField(d, k); err != nil {
			list = append(list, fmt.Errorf("%s.%v", key, err))
		}
	}
	return errors.Join(list...)
}

// subObject reads an object member.
func subObject(m map[string]json.RawMessage, key string) (map[string]json.RawMessage, error) {
	raw, ok := m[key]
	if !ok {
		return nil, fmt.Errorf("%q is missing", key)
	}
	o, err := DecodeObject(raw)
	if err != nil {
		return nil, fmt.Errorf("%q is %s, want an object", key, clipped(string(raw), 60))
	}
	return o, nil
}

// statSnap is what the before/after specs compare: the sums over the
// versions of one model, and the latest last_inference.
type statSnap struct {
	inference, execution, last, success, fail uint64
}

func snapREST(entries []map[string]json.RawMessage) (statSnap, error) {
	var s statSnap
	for _, e := range entries {
		var list []error
		n := func(m map[string]json.RawMessage, key string) uint64 {
			v, err := countField(m, key)
			if err != nil {
				list = append(list, err)
			}
			return v
		}
		s.inference += n(e, "inference_count")
		s.execution += n(e, "execution_count")
		s.last = max(s.last, n(e, "last_inference"))
		is, err := subObject(e, "inference_stats")
		if err != nil {
			return s, err
		}
		for key, into := range map[string]*uint64{"success": &s.success, "fail": &s.fail} {
			d, err := subObject(is, key)
			if err != nil {
				return s, fmt.Errorf("inference_stats: %v", err)
			}
			*into += n(d, "count")
		}
		if err := errors.Join(list...); err != nil {
			return s, err
		}
	}
	return s, nil
}

func snapGRPC(r *pb.ModelStatisticsResponse) statSnap {
	var s statSnap
	for _, m := range r.GetModelStats() {
		s.inference += m.GetInferenceCount()
		s.execution += m.GetExecutionCount()
		s.last = max(s.last, m.GetLastInference())
		s.success += m.GetInferenceStats().GetSuccess().GetCount()
		s.fail += m.GetInferenceStats().GetFail().GetCount()
	}
	return s
}

// nonDecreasing checks OIP-EXT-STAT-008's "cumulative and non-decreasing".
func (after statSnap) nonDecreasing(before statSnap) error {
	var list []error
	for _, c := range []struct {
		name string
		b, a uint64
	}{
		{"inference_count", before.inference, after.inference},
		{"execution_count", before.execution, after.execution},
		{"last_inference", before.last, after.last},
		{"inference_stats.success.count", before.success, after.success},
		{"inference_stats.fail.count", before.fail, after.fail},
	} {
		if c.a < c.b {
			list = append(list, fmt.Errorf("%s went down from %d to %d", c.name, c.b, c.a))
		}
	}
	return errors.Join(list...)
}

// lastInferenceErr checks OIP-EXT-STAT-007 against the suite's clock: the
// request was sent between sent and answered.
func lastInferenceErr(last uint64, sent, answered time.Time) error {
	const skew = time.Minute
	lo, hi := sent.Add(-skew).UnixMilli(), answered.Add(skew).UnixMilli()
	if int64(last) <= lo || int64(last) > hi {
		return fmt.Errorf("last_inference is %d, want milliseconds since the epoch near %d (the request was sent then; %v of clock skew allowed)",
			last, sent.UnixMilli(), skew)
	}
	return nil
}

// restStats reads add_sub's statistics and their snapshot; ok is false
// (findings recorded under req, "" in a spec labelled with one requirement:
// verifyAs) when the answer is not usable.
func restStats(ctx context.Context, req string) (statSnap, *Exchange, bool) {
	settle(ctx, func() (statSnap, bool) {
		entries, err := statEntries(Get(ctx, "/v2/models/add_sub/stats"), "add_sub")
		if err != nil {
			return statSnap{}, false
		}
		snap, err := snapREST(entries)
		return snap, err == nil
	})
	e := Get(ctx, "/v2/models/add_sub/stats")
	var snap statSnap
	ok := verifyAs(req, e).To(PassCheck(func(e *Exchange) error {
		entries, err := statEntries(e, "add_sub")
		if err != nil {
			return err
		}
		if len(entries) == 0 {
			return fmt.Errorf("%s lists no statistics of add_sub", e.What())
		}
		snap, err = snapREST(entries)
		return err
	}))
	return snap, e, ok
}

// inferAddSub sends the canonical add_sub request (batch size 1) and
// checks that it succeeded (under req, as restStats), so that the counters
// have something to count.
func inferAddSub(ctx context.Context, req string) (sent, answered time.Time, ok bool) {
	b, _, _ := addSubRequest()
	sent = time.Now()
	e := Post(ctx, "add_sub", "", b)
	answered = time.Now()
	return sent, answered, verifyAs(req, e).To(HaveStatus(http.StatusOK), "add_sub must answer for its statistics to be checked")
}

var _ = Describe("REST statistics", Over(TransportREST), Needs(specs.ExtStatistics), func() {
	It("advertises statistics in server metadata", Req("OIP-EXT-STAT-001"), func(ctx SpecContext) {
		Verify(Get(ctx, "/v2")).To(PassCheck(func(o *Object) error {
			skipUnknownSupport(specs.ExtStatistics)
			exts, err := extensionsField(o.Members)
			if err != nil {
				return err
			}
			return advertisedErr(exts, specs.ExtStatistics)
		}))
	})

	It("answers the statistics of all models, of one model and of one version", Req("OIP-EXT-STAT-002"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		Verify(Get(ctx, "/v2/models/stats")).To(PassCheck(func(e *Exchange) error {
			entries, err := statEntries(e, "")
			if err != nil {
				return err
			}
			for _, s := range entries {
				if name, _ := StringField(s, "name"); name == "add_sub" {
					return nil
				}
			}
			return fmt.Errorf("%s lists no statistics of add_sub, a deployed model", e.What())
		}))
		Verify(Get(ctx, "/v2/models/add_sub/stats")).To(PassCheck(func(e *Exchange) error {
			entries, err := statEntries(e, "add_sub")
			if err == nil && len(entries) == 0 {
				err = fmt.Errorf("%s lists no statistics of add_sub", e.What())
			}
			return err
		}))
		if !Versions() || !Current().Deployed("versioned") {
			return
		}
		Verify(Get(ctx, "/v2/models/versioned/versions/1/stats")).To(PassCheck(func(e *Exchange) error {
			entries, err := statEntries(e, "versioned")
			if err != nil {
				return err
			}
			if len(entries) == 0 {
				return fmt.Errorf("%s lists no statistics", e.What())
			}
			for i, s := range entries {
				if _, present := s["version"]; !present {
					continue // version is optional
				}
				if v, err := StringField(s, "version"); err != nil || v != "1" {
					return fmt.Errorf("model_stats[%d].version is %s; the route asks for version 1 only", i, clipped(string(s["version"]), 40))
				}
			}
			return nil
		}))
	})

	It("answers {\"model_stats\": [...]} whose entries carry the statistics members", Req("OIP-EXT-STAT-003"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		Verify(Get(ctx, "/v2/models/add_sub/stats")).To(PassCheck(func(e *Exchange) error {
			entries, err := statEntries(e, "add_sub")
			if err != nil {
				return err
			}
			var list []error
			for i, s := range entries {
				if raw, ok := s["version"]; ok {
					var v string
					if json.Unmarshal(raw, &v) != nil {
						list = append(list, fmt.Errorf("model_stats[%d].version is %s, want a string", i, clipped(string(raw), 40)))
					}
				}
				for _, k := range []string{"last_inference", "inference_count", "execution_count"} {
					if _, err := countField(s, k); err != nil {
						list = append(list, fmt.Errorf("model_stats[%d]: %v", i, err))
					}
				}
				if _, err := subObject(s, "inference_stats"); err != nil {
					list = append(list, fmt.Errorf("model_stats[%d]: %v", i, err))
				}
				var batches []json.RawMessage
				if err := json.Unmarshal(s["batch_stats"], &batches); err != nil || batches == nil {
					list = append(list, fmt.Errorf("model_stats[%d].batch_stats is %s, want an array", i, clipped(string(s["batch_stats"]), 60)))
				}
			}
			return errors.Join(list...)
		}))
	})

	It("reports success, fail, queue and compute durations in inference_stats", Req("OIP-EXT-STAT-004"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		e := Get(ctx, "/v2/models/add_sub/stats")
		check := func(keys ...string) func(*Exchange) error {
			return func(e *Exchange) error {
				entries, err := statEntries(e, "add_sub")
				if err != nil {
					return err
				}
				var list []error
				for i, s := range entries {
					is, err := subObject(s, "inference_stats")
					if err != nil {
						list = append(list, fmt.Errorf("model_stats[%d]: %v", i, err))
						continue
					}
					for _, k := range keys {
						if err := durationStatErr(is, k); err != nil {
							list = append(list, fmt.Errorf("model_stats[%d].inference_stats: %v", i, err))
						}
					}
				}
				return errors.Join(list...)
			}
		}
		Verify(e).To(PassCheck(check("success", "fail", "queue", "compute_input", "compute_infer", "compute_output")))
		Verify(e).Soft("the catalog's test is soft for the cache statistics").To(PassCheck(check("cache_hit", "cache_miss")))
	})

	It("counts one inference and one execution for a request of batch size 1", Req("OIP-EXT-STAT-005", "OIP-EXT-STAT-006"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		before, _, ok := restStats(ctx, "OIP-EXT-STAT-005")
		if !ok {
			return
		}
		if _, _, ok := inferAddSub(ctx, "OIP-EXT-STAT-005"); !ok {
			return
		}
		after, e, ok := restStats(ctx, "OIP-EXT-STAT-005")
		if !ok {
			return
		}
		VerifyReq("OIP-EXT-STAT-005", after.inference).On(e).To(PassCheck(func(n uint64) error {
			if n != before.inference+1 {
				return fmt.Errorf("inference_count went from %d to %d after one inference of batch size 1, want +1", before.inference, n)
			}
			return nil
		}))
		VerifyReq("OIP-EXT-STAT-006", after.execution).On(e).To(PassCheck(func(n uint64) error {
			if n != before.execution+1 {
				return fmt.Errorf("execution_count went from %d to %d after one request, want +1", before.execution, n)
			}
			return nil
		}))
	})

	It("reports last_inference in milliseconds since the epoch", Req("OIP-EXT-STAT-007"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		sent, answered, ok := inferAddSub(ctx, "")
		if !ok {
			return
		}
		after, e, ok := restStats(ctx, "")
		if !ok {
			return
		}
		Verify(after.last).On(e).To(PassCheck(func(last uint64) error {
			return lastInferenceErr(last, sent, answered)
		}))
	})

	It("counts successes and failures cumulatively", Req("OIP-EXT-STAT-008"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		before, _, ok := restStats(ctx, "")
		if !ok {
			return
		}
		if _, _, ok := inferAddSub(ctx, ""); !ok {
			return
		}
		mid, e, ok := restStats(ctx, "")
		if !ok {
			return
		}
		Verify(mid).On(e).To(PassCheck(func(s statSnap) error {
			if err := s.nonDecreasing(before); err != nil {
				return err
			}
			if s.success != before.success+1 {
				return fmt.Errorf("inference_stats.success.count went from %d to %d after one successful request, want +1", before.success, s.success)
			}
			return nil
		}))
		// A request of the wrong shape: refused, and a failure of add_sub
		// if the server counts requests it refuses before the model runs.
		b, _, _ := addSubRequest()
		input0(b)["shape"] = []int64{1, 15}
		AfterNegative()
		if bad := Post(ctx, "add_sub", "", b); !Answered(bad) {
			return
		}
		after, e, ok := restStats(ctx, "")
		if !ok {
			return
		}
		Verify(after).On(e).To(PassCheck(func(s statSnap) error { return s.nonDecreasing(mid) }))
		if after.fail == mid.fail {
			Note("OIP-EXT-STAT-008", "fail.count did not count a request refused before the model ran (the catalog counts failures that reach the model)")
		}
	})

	It("describes each batch size in batch_stats", Req("OIP-EXT-STAT-009"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		if _, _, ok := inferAddSub(ctx, ""); !ok {
			return
		}
		e := Get(ctx, "/v2/models/add_sub/stats")
		batches := func(fn func(i int, b map[string]json.RawMessage) error) func(*Exchange) error {
			return func(e *Exchange) error {
				entries, err := statEntries(e, "add_sub")
				if err != nil {
					return err
				}
				var list []error
				for i, s := range entries {
					var bs []map[string]json.RawMessage
					if err := json.Unmarshal(s["batch_stats"], &bs); err != nil {
						list = append(list, fmt.Errorf("model_stats[%d].batch_stats is %s, want an array of objects", i, clipped(string(s["batch_stats"]), 60)))
						continue
					}
					for _, b := range bs {
						if err := fn(i, b); err != nil {
							list = append(list, err)
						}
					}
				}
				return errors.Join(list...)
			}
		}
		Verify(e).To(PassCheck(batches(func(i int, b map[string]json.RawMessage) error {
			var list []error
			if _, err := countField(b, "batch_size"); err != nil {
				list = append(list, fmt.Errorf("model_stats[%d].batch_stats: %v", i, err))
			}
			for _, k := range []string{"compute_input", "compute_infer", "compute_output"} {
				if err := durationStatErr(b, k); err != nil {
					list = append(list, fmt.Errorf("model_stats[%d].batch_stats: %v", i, err))
				}
			}
			return errors.Join(list...)
		})))
		Verify(e).Soft("the catalog's test of the batch size is soft").To(PassCheck(func(e *Exchange) error {
			found := false
			if err := batches(func(_ int, b map[string]json.RawMessage) error {
				if n, err := countField(b, "batch_size"); err == nil && n == 1 {
					found = true
				}
				return nil
			})(e); err != nil {
				return err
			}
			if !found {
				return errors.New("batch_stats has no entry of batch size 1 after a request of batch size 1")
			}
			return nil
		}))
	})

	It("reports response_stats and memory_usage in their documented forms when present", Req("OIP-EXT-STAT-010"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		Verify(Get(ctx, "/v2/models/add_sub/stats")).To(PassCheck(func(e *Exchange) error {
			entries, err := statEntries(e, "add_sub")
			if err != nil {
				return err
			}
			var list []error
			for i, s := range entries {
				if raw, ok := s["response_stats"]; ok {
					var rs map[string]map[string]json.RawMessage
					if err := json.Unmarshal(raw, &rs); err != nil {
						list = append(list, fmt.Errorf("model_stats[%d].response_stats is %s, want an object of objects", i, clipped(string(raw), 60)))
					}
					for idx, r := range rs {
						for _, k := range []string{"compute_infer", "compute_output", "success", "fail", "empty_response", "cancel"} {
							if err := durationStatErr(r, k); err != nil {
								list = append(list, fmt.Errorf("model_stats[%d].response_stats[%q]: %v", i, idx, err))
							}
						}
					}
				}
				if raw, ok := s["memory_usage"]; ok {
					var mu []map[string]json.RawMessage
					if err := json.Unmarshal(raw, &mu); err != nil {
						list = append(list, fmt.Errorf("model_stats[%d].memory_usage is %s, want an array of objects", i, clipped(string(raw), 60)))
					}
					for j, u := range mu {
						if t, err := StringField(u, "type"); err != nil || (t != "CPU" && t != "CPU_PINNED" && t != "GPU") {
							list = append(list, fmt.Errorf("model_stats[%d].memory_usage[%d].type is %s, want CPU, CPU_PINNED or GPU", i, j, clipped(string(u["type"]), 40)))
						}
						var id int64
						if err := json.Unmarshal(u["id"], &id); err != nil {
							list = append(list, fmt.Errorf("model_stats[%d].memory_usage[%d].id is %s, want an integer", i, j, clipped(string(u["id"]), 40)))
						}
						if _, err := countField(u, "byte_size"); err != nil {
							list = append(list, fmt.Errorf("model_stats[%d].memory_usage[%d]: %v", i, j, err))
						}
					}
				}
			}
			return errors.Join(list...)
		}))
	})

	It("answers the statistics of an unknown model with an error status and {\"error\": string}", Req("OIP-EXT-STAT-011"), func(ctx SpecContext) {
		AfterNegative()
		Verify(Get(ctx, "/v2/models/does_not_exist/stats")).To(BeErrorResponse())
	})
})

// grpcStats calls ModelStatistics{name} once the counters settled; the
// caller checks the answer with statsOf(name) under OIP-EXT-STAT-012.
func grpcStats(ctx context.Context, name string) (*pb.ModelStatisticsResponse, *Call) {
	settle(ctx, func() (statSnap, bool) {
		r, c := Invoke(ctx, "ModelStatistics", &pb.ModelStatisticsRequest{Name: name}, Stub().ModelStatistics)
		return snapGRPC(r), c.Err == nil
	})
	return Invoke(ctx, "ModelStatistics", &pb.ModelStatisticsRequest{Name: name}, Stub().ModelStatistics)
}

// statsOf passes a ModelStatistics answer of statistics of name only (of any
// model when name is "").
func statsOf(name string) types.GomegaMatcher {
	return PassCheck(func(r *pb.ModelStatisticsResponse) error {
		if name == "" {
			return nil
		}
		if len(r.GetModelStats()) == 0 {
			return fmt.Errorf("ModelStatistics{name: %q} answered no statistics", name)
		}
		for i, m := range r.GetModelStats() {
			if m.GetName() != name {
				return fmt.Errorf("model_stats[%d] is of %q; the request asks for %q only", i, m.GetName(), name)
			}
		}
		return nil
	})
}

var _ = Describe("gRPC statistics", Over(TransportGRPC), Needs(specs.ExtStatistics), func() {
	It("advertises statistics in server metadata", Req("OIP-EXT-STAT-001"), func(ctx SpecContext) {
		_, c := Invoke(ctx, "ServerMetadata", &pb.ServerMetadataRequest{}, Stub().ServerMetadata)
		Verify(c).To(PassCheck(func(m *pb.ServerMetadataResponse) error {
			return advertisedErr(m.GetExtensions(), specs.ExtStatistics)
		}))
	})

	It("answers ModelStatistics for every model and for one model", Req("OIP-EXT-STAT-012"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		if r, c := grpcStats(ctx, ""); Verify(c).To(statsOf("")) {
			Verify(c).To(PassCheck(func(*pb.ModelStatisticsResponse) error {
				for _, m := range r.GetModelStats() {
					if m.GetName() == "add_sub" {
						return nil
					}
				}
				return errors.New("ModelStatistics{} (every model) lists no statistics of add_sub, a deployed model")
			}))
		}
		_, one := grpcStats(ctx, "add_sub")
		Verify(one).To(statsOf("add_sub"))
		if !Versions() || !Current().Deployed("versioned") {
			return
		}
		_, c := Invoke(ctx, "ModelStatistics", &pb.ModelStatisticsRequest{Name: "versioned", Version: "1"}, Stub().ModelStatistics)
		Verify(c).To(PassCheck(func(r *pb.ModelStatisticsResponse) error {
			if len(r.GetModelStats()) == 0 {
				return errors.New("ModelStatistics{versioned, 1} answered no statistics")
			}
			for i, m := range r.GetModelStats() {
				if m.GetName() != "versioned" || m.GetVersion() != "" && m.GetVersion() != "1" {
					return fmt.Errorf("model_stats[%d] is of %q version %q; the request asks for version 1 of versioned", i, m.GetName(), m.GetVersion())
				}
			}
			return nil
		}))
	})

	It("answers ModelStatistics entries with inference_stats and batch_stats", Req("OIP-EXT-STAT-012", "OIP-EXT-STAT-003", "OIP-EXT-STAT-004", "OIP-EXT-STAT-009", "OIP-EXT-STAT-010"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		req, _, _ := addSubPB(false)
		if _, ic := Infer(ctx, req); !VerifyReq("OIP-EXT-STAT-009", ic).To(BeOK(), "add_sub must answer for its statistics to be checked") {
			return
		}
		r, c := grpcStats(ctx, "add_sub")
		if !VerifyReq("OIP-EXT-STAT-012", c).To(statsOf("add_sub")) {
			return
		}
		each := func(fn func(i int, m *pb.ModelStatistics) []error) func(*pb.ModelStatisticsResponse) error {
			return func(*pb.ModelStatisticsResponse) error {
				var list []error
				for i, m := range r.GetModelStats() {
					list = append(list, fn(i, m)...)
				}
				return errors.Join(list...)
			}
		}
		durations := func(where string, ds map[string]*pb.StatisticDuration) []error {
			var list []error
			for _, k := range slices.Sorted(maps.Keys(ds)) {
				if ds[k] == nil {
					list = append(list, fmt.Errorf("%s.%s is not set", where, k))
				}
			}
			return list
		}
		VerifyReq("OIP-EXT-STAT-003", c).To(PassCheck(each(func(i int, m *pb.ModelStatistics) []error {
			if m.GetInferenceStats() == nil {
				return []error{fmt.Errorf("model_stats[%d].inference_stats is not set", i)}
			}
			return nil
		})))
		VerifyReq("OIP-EXT-STAT-004", c).To(PassCheck(each(func(i int, m *pb.ModelStatistics) []error {
			is := m.GetInferenceStats()
			return durations(fmt.Sprintf("model_stats[%d].inference_stats", i), map[string]*pb.StatisticDuration{
				"success": is.GetSuccess(), "fail": is.GetFail(), "queue": is.GetQueue(),
				"compute_input": is.GetComputeInput(), "compute_infer": is.GetComputeInfer(), "compute_output": is.GetComputeOutput(),
			})
		})))
		VerifyReq("OIP-EXT-STAT-004", c).Soft("the catalog's test is soft for the cache statistics").To(PassCheck(each(func(i int, m *pb.ModelStatistics) []error {
			is := m.GetInferenceStats()
			return durations(fmt.Sprintf("model_stats[%d].inference_stats", i), map[string]*pb.StatisticDuration{
				"cache_hit": is.GetCacheHit(), "cache_miss": is.GetCacheMiss(),
			})
		})))
		VerifyReq("OIP-EXT-STAT-009", c).To(PassCheck(each(func(i int, m *pb.ModelStatistics) []error {
			var list []error
			for j, b := range m.GetBatchStats() {
				list = append(list, durations(fmt.Sprintf("model_stats[%d].batch_stats[%d]", i, j), map[string]*pb.StatisticDuration{
					"compute_input": b.GetComputeInput(), "compute_infer": b.GetComputeInfer(), "compute_output": b.GetComputeOutput(),
				})...)
			}
			return list
		})))
		VerifyReq("OIP-EXT-STAT-009", c).Soft("the catalog's test of the batch size is soft").To(PassCheck(func(*pb.ModelStatisticsResponse) error {
			for _, m := range r.GetModelStats() {
				for _, b := range m.GetBatchStats() {
					if b.GetBatchSize() == 1 {
						return nil
					}
				}
			}
			return errors.New("batch_stats has no entry of batch size 1 after a request of batch size 1")
		}))
		VerifyReq("OIP-EXT-STAT-010", c).To(PassCheck(each(func(i int, m *pb.ModelStatistics) []error {
			var list []error
			for j, u := range m.GetMemoryUsage() {
				if t := u.GetType(); t != "CPU" && t != "CPU_PINNED" && t != "GPU" {
					list = append(list, fmt.Errorf("model_stats[%d].memory_usage[%d].type is %q, want CPU, CPU_PINNED or GPU", i, j, t))
				}
			}
			for _, k := range slices.Sorted(maps.Keys(m.GetResponseStats())) {
				v := m.GetResponseStats()[k]
				list = append(list, durations(fmt.Sprintf("model_stats[%d].response_stats[%q]", i, k), map[string]*pb.StatisticDuration{
					"compute_infer": v.GetComputeInfer(), "compute_output": v.GetComputeOutput(), "success": v.GetSuccess(),
					"fail": v.GetFail(), "empty_response": v.GetEmptyResponse(), "cancel": v.GetCancel(),
				})...)
			}
			return list
		})))
	})

	It("counts a ModelInfer in ModelStatistics", Req("OIP-EXT-STAT-012", "OIP-EXT-STAT-005", "OIP-EXT-STAT-006", "OIP-EXT-STAT-007", "OIP-EXT-STAT-008"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		before, c := grpcStats(ctx, "add_sub")
		if !VerifyReq("OIP-EXT-STAT-012", c).To(statsOf("add_sub")) {
			return
		}
		req, _, _ := addSubPB(false)
		sent := time.Now()
		_, ic := Infer(ctx, req)
		answered := time.Now()
		if !VerifyReq("OIP-EXT-STAT-012", ic).To(BeOK(), "add_sub must answer for its statistics to be checked") {
			return
		}
		after, c := grpcStats(ctx, "add_sub")
		if !VerifyReq("OIP-EXT-STAT-012", c).To(statsOf("add_sub")) {
			return
		}
		b, a := snapGRPC(before), snapGRPC(after)
		plusOne := func(what string, b, a uint64) func(*pb.ModelStatisticsResponse) error {
			return func(*pb.ModelStatisticsResponse) error {
				if a != b+1 {
					return fmt.Errorf("%s went from %d to %d after one ModelInfer of batch size 1, want +1", what, b, a)
				}
				return nil
			}
		}
		VerifyReq("OIP-EXT-STAT-005", c).To(PassCheck(plusOne("inference_count", b.inference, a.inference)))
		VerifyReq("OIP-EXT-STAT-006", c).To(PassCheck(plusOne("execution_count", b.execution, a.execution)))
		VerifyReq("OIP-EXT-STAT-007", c).To(PassCheck(func(*pb.ModelStatisticsResponse) error { return lastInferenceErr(a.last, sent, answered) }))
		VerifyReq("OIP-EXT-STAT-008", c).To(PassCheck(func(r *pb.ModelStatisticsResponse) error {
			if err := a.nonDecreasing(b); err != nil {
				return err
			}
			return plusOne("inference_stats.success.count", b.success, a.success)(r)
		}))
	})

	It("answers ModelStatistics for an unknown model with a non-OK status", Req("OIP-EXT-STAT-012"), func(ctx SpecContext) {
		AfterNegative()
		_, c := Invoke(ctx, "ModelStatistics", &pb.ModelStatisticsRequest{Name: "does_not_exist"}, Stub().ModelStatistics)
		if Answered(c) {
			Verify(c).To(BeRejected())
		}
	})
})

// settle waits until the statistics read stops changing: two reads 100 ms
// apart agree, for at most 2 s. A server may record a request's statistics
// after it has answered it (Triton records them on its backend thread), so
// a read right after a request can miss it; the counts compared are read
// once settled, and an overcount still shows.
func settle(ctx context.Context, read func() (statSnap, bool)) {
	prev, ok := read()
	for deadline := time.Now().Add(2 * time.Second); ok && time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
		var cur statSnap
		if cur, ok = read(); cur == prev {
			return
		}
		prev = cur
	}
}
