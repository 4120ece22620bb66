package suite

import (
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
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
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
		case statsObserved(e):
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

// statsObserved reports whether a probe's answer is add_sub's statistics:
// a body the schema accepts, listing add_sub only, or one it does not
// accept that is still a {"model_stats": ...} object (the extension is
// there; its specs grade the body).
func statsObserved(e *Exchange) bool {
	var r oip.StatisticsResponse
	switch err := DecodeBody(e, &r); {
	case err == nil:
		return namesOnly(e, r, "add_sub") == nil
	case errors.Is(err, ErrBodyBreaksSchema):
		m, err := DecodeObject(e.Body)
		return err == nil && m["model_stats"] != nil
	}
	return false
}

// namesOnly checks that statistics list model, and no other model (any
// model when model is "").
func namesOnly(e *Exchange, r oip.StatisticsResponse, model string) error {
	if model == "" {
		return nil
	}
	if len(r.ModelStats) == 0 {
		return fmt.Errorf("%s lists no statistics of %s", e.What(), model)
	}
	for i, s := range r.ModelStats {
		if s.Name != model {
			return fmt.Errorf("model_stats[%d] is of %q; %s asks for %q only", i, s.Name, e.What(), model)
		}
	}
	return nil
}

// statsBody reads the statistics answer e for c, a check of e (ReadBody: a
// body the schema refuses is graded by it, not here), and checks that it
// lists model only.
func statsBody(c *Check, e *Exchange, model string) (oip.StatisticsResponse, bool) {
	r, ok := ReadBody[oip.StatisticsResponse](c)
	return r, ok && c.To(PassCheck(func(*Exchange) error { return namesOnly(e, r, model) }))
}

// statSnap is what the before/after specs compare: the sums over the
// versions of one model, and the latest last_inference.
type statSnap struct {
	inference, execution, last, success, fail uint64
	// successNS and inferNS are the total time of success and
	// compute_infer.
	successNS, inferNS uint64
}

// snapOf sums statistics over the versions of a model, as REST answers
// them or as oip reads a ModelStatistics answer.
func snapOf(r *oip.StatisticsResponse) statSnap {
	var s statSnap
	for _, m := range r.ModelStats {
		s.inference += m.InferenceCount
		s.execution += m.ExecutionCount
		s.last = max(s.last, m.LastInference)
		s.success += m.InferenceStats.Success.Count
		s.fail += m.InferenceStats.Fail.Count
		s.successNS += m.InferenceStats.Success.NS
		s.inferNS += m.InferenceStats.ComputeInfer.NS
	}
	return s
}

func snapGRPC(r *pb.ModelStatisticsResponse) statSnap { return snapOf(oip.StatisticsFromProto(r)) }

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

// countRounds are the inferences of batch size 1 the counting specs send,
// in two rounds of different sizes, each between two reads of the counters.
var countRounds = [2]uint64{1, 2}

// growthErr grades a counter read before and after each round of
// countRounds (snaps[i] and snaps[i+1]). Fewer than the round's inferences
// is a failure (hard). More is either the server counting each inference k
// times, which shows as k·N in both rounds (hard), or other clients using
// the model between the reads, which the suite cannot rule out on a shared
// server (soft: a warning at most).
func growthErr(what string, snaps [3]uint64) (hard, soft error) {
	var d [2]uint64
	for i, n := range countRounds {
		if snaps[i+1] < snaps[i]+n {
			return fmt.Errorf("%s went from %d to %d after %d inference(s) of batch size 1, want +%d", what, snaps[i], snaps[i+1], n, n), nil
		}
		d[i] = snaps[i+1] - snaps[i]
	}
	switch k := d[0] / countRounds[0]; {
	case d == countRounds:
		return nil, nil
	case k > 1 && d[0] == k*countRounds[0] && d[1] == k*countRounds[1]:
		return fmt.Errorf("%s grew by %d and %d after %d and %d inferences of batch size 1: each inference counted %d times", what, d[0], d[1], countRounds[0], countRounds[1], k), nil
	}
	return nil, fmt.Errorf("%s grew by %d and %d after %d and %d inferences of batch size 1, more than sent (another client may have used the model between the reads)", what, d[0], d[1], countRounds[0], countRounds[1])
}

// verifyGrowth checks one counter under req with growthErr.
func verifyGrowth(req string, ev Evidencer, what string, snaps [3]uint64) {
	hard, soft := growthErr(what, snaps)
	if verifyAs(req, snaps).On(ev).To(PassCheck(func([3]uint64) error { return hard })) {
		verifyAs(req, snaps).On(ev).Soft("other clients may use the model between two reads of its counters").To(PassCheck(func([3]uint64) error { return soft }))
	}
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
		var r oip.StatisticsResponse
		err := DecodeBody(Get(ctx, "/v2/models/add_sub/stats"), &r)
		return snapOf(&r), err == nil
	})
	e := Get(ctx, "/v2/models/add_sub/stats")
	r, ok := statsBody(verifyAs(req, e), e, "add_sub")
	return snapOf(&r), e, ok
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
		all := Get(ctx, "/v2/models/stats")
		if r, ok := statsBody(Verify(all), all, ""); ok {
			Verify(all).To(PassCheck(func(e *Exchange) error {
				if !slices.ContainsFunc(r.ModelStats, func(s oip.ModelStatistics) bool { return s.Name == "add_sub" }) {
					return fmt.Errorf("%s lists no statistics of add_sub, a deployed model", e.What())
				}
				return nil
			}))
		}
		one := Get(ctx, "/v2/models/add_sub/stats")
		statsBody(Verify(one), one, "add_sub")
		if !Versions() || !Current().Deployed("versioned") {
			return
		}
		v1 := Get(ctx, "/v2/models/versioned/versions/1/stats")
		if r, ok := statsBody(Verify(v1), v1, "versioned"); ok {
			Verify(v1).To(PassCheck(func(*Exchange) error {
				for i, s := range r.ModelStats {
					if s.Version != "" && s.Version != "1" { // version is optional
						return fmt.Errorf("model_stats[%d].version is %q; the route asks for version 1 only", i, s.Version)
					}
				}
				return nil
			}))
		}
	})

	// The members' shapes (OIP-EXT-STAT-003, -004, -009, -010) are the
	// schema's statistics_response: these specs grade it on add_sub's
	// statistics, and check the values a schema cannot.
	It("answers {\"model_stats\": [...]} whose entries carry the statistics members", Req("OIP-EXT-STAT-003"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		Verify(Get(ctx, "/v2/models/add_sub/stats")).To(MatchSchema())
	})

	It("reports success, fail, queue and compute durations in inference_stats", Req("OIP-EXT-STAT-004"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		Verify(Get(ctx, "/v2/models/add_sub/stats")).To(MatchSchema())
	})

	It("counts exactly one inference and one execution per request of batch size 1", Req("OIP-EXT-STAT-005", "OIP-EXT-STAT-006"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		var snaps [3]statSnap
		var e *Exchange
		for i := range snaps {
			if i > 0 {
				for range countRounds[i-1] {
					if _, _, ok := inferAddSub(ctx, "OIP-EXT-STAT-005"); !ok {
						return
					}
				}
			}
			var ok bool
			if snaps[i], e, ok = restStats(ctx, "OIP-EXT-STAT-005"); !ok {
				return
			}
		}
		verifyGrowth("OIP-EXT-STAT-005", e, "inference_count", [3]uint64{snaps[0].inference, snaps[1].inference, snaps[2].inference})
		verifyGrowth("OIP-EXT-STAT-006", e, "execution_count", [3]uint64{snaps[0].execution, snaps[1].execution, snaps[2].execution})
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
		Verify(e).To(MatchSchema())
		r, ok := ReadBody[oip.StatisticsResponse](Verify(e))
		if !ok {
			return
		}
		Verify(e).Soft("the catalog's test of the batch size is soft").To(PassCheck(func(*Exchange) error {
			for _, s := range r.ModelStats {
				if slices.ContainsFunc(s.BatchStats, func(b oip.BatchStatistics) bool { return b.BatchSize == 1 }) {
					return nil
				}
			}
			return errors.New("batch_stats has no entry of batch size 1 after a request of batch size 1")
		}))
	})

	It("reports response_stats and memory_usage in their documented forms when present", Req("OIP-EXT-STAT-010"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		Verify(Get(ctx, "/v2/models/add_sub/stats")).To(MatchSchema())
	})

	// A model's route covers all its versions: each version its metadata
	// lists has an entry of its own (version is optional in an entry, so
	// entries that name none are only a warning).
	It("gives every version of a model its own entry", Req("OIP-EXT-STAT-002"), func(ctx SpecContext) {
		// Only a model with versions can show it; without versioned the
		// requirement is graded by its other specs, not left skipped.
		if !Current().Deployed("versioned") {
			Note("OIP-EXT-STAT-002", "per-version entries not checked: fixture versioned is not deployed")
			return
		}
		if !Versions() {
			Skip(SkipNotApplicable + "versioned lists no versions")
		}
		var md struct {
			Versions []string `json:"versions"`
		}
		if m := Get(ctx, "/v2/models/versioned"); m.Err != nil || m.Status != http.StatusOK || json.Unmarshal(m.Body, &md) != nil || len(md.Versions) == 0 {
			Skip(SkipNotApplicable + "the metadata of versioned lists no versions")
		}
		e := Get(ctx, "/v2/models/versioned/stats")
		r, ok := statsBody(Verify(e), e, "versioned")
		if !ok {
			return
		}
		if slices.ContainsFunc(r.ModelStats, func(s oip.ModelStatistics) bool { return s.Version == "" }) {
			Verify(e).Soft("version is optional in a statistics entry").To(PassCheck(func(*Exchange) error {
				return fmt.Errorf("%d entries for the versions %q, some naming no version", len(r.ModelStats), md.Versions)
			}))
			return
		}
		Verify(e).To(PassCheck(func(*Exchange) error {
			var missing []string
			for _, v := range md.Versions {
				if !slices.ContainsFunc(r.ModelStats, func(s oip.ModelStatistics) bool { return s.Version == v }) {
					missing = append(missing, v)
				}
			}
			if len(missing) > 0 {
				return fmt.Errorf("no entry for version(s) %q of the versions %q the metadata lists", missing, md.Versions)
			}
			return nil
		}))
	})

	// delay (a reference-server extra, so looked for here rather than
	// among the contract's fixtures) sleeps delay_ms before answering:
	// the time statistics must show at least that much more.
	It("counts the time of a request that took a known time", Req("OIP-EXT-STAT-013"), func(ctx SpecContext) {
		if m := Get(ctx, "/v2/models/delay"); m.Err != nil || m.Status != http.StatusOK {
			Skip(SkipNotApplicable + "model delay (a reference-server extra) is not deployed")
		}
		const delay = 50 * time.Millisecond
		// Read once settled, as restStats reads add_sub's.
		stats := func() (statSnap, *Exchange, bool) {
			settle(ctx, func() (statSnap, bool) {
				var r oip.StatisticsResponse
				err := DecodeBody(Get(ctx, "/v2/models/delay/stats"), &r)
				return snapOf(&r), err == nil
			})
			e := Get(ctx, "/v2/models/delay/stats")
			r, ok := statsBody(Verify(e), e, "delay")
			return snapOf(&r), e, ok
		}
		before, _, ok := stats()
		if !ok {
			return
		}
		b := Request(JSONInput(tensor.Tensor{Name: "INPUT0", Datatype: tensor.FP32, Shape: []int64{1}, Data: []float32{1}}))
		b.JSON["parameters"] = Obj{"delay_ms": delay.Milliseconds()}
		if !Verify(Post(ctx, "delay", "", b)).To(HaveStatus(http.StatusOK), "delay must answer for its statistics to be checked") {
			return
		}
		after, e, ok := stats()
		if !ok {
			return
		}
		Verify(after).On(e).To(PassCheck(func(a statSnap) error {
			var list []error
			for _, d := range []struct {
				name    string
				b, a    uint64
				counted bool
			}{
				// A success not counted at all is OIP-EXT-STAT-008's.
				{"inference_stats.success.ns", before.successNS, a.successNS, a.success > before.success},
				{"inference_stats.compute_infer.ns", before.inferNS, a.inferNS, true},
			} {
				if d.counted && (d.a < d.b || time.Duration(d.a-d.b) < delay) {
					list = append(list, fmt.Errorf("%s went from %d to %d after a request that slept %v, want at least %d more", d.name, d.b, d.a, delay, delay.Nanoseconds()))
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
		var snaps [3]statSnap
		var c *Call
		var sent, answered time.Time
		for i := range snaps {
			if i > 0 {
				for range countRounds[i-1] {
					req, _, _ := addSubPB(false)
					sent = time.Now()
					_, ic := Infer(ctx, req)
					answered = time.Now()
					if !VerifyReq("OIP-EXT-STAT-012", ic).To(BeOK(), "add_sub must answer for its statistics to be checked") {
						return
					}
				}
			}
			var r *pb.ModelStatisticsResponse
			if r, c = grpcStats(ctx, "add_sub"); !VerifyReq("OIP-EXT-STAT-012", c).To(statsOf("add_sub")) {
				return
			}
			snaps[i] = snapGRPC(r)
		}
		of := func(f func(statSnap) uint64) [3]uint64 { return [3]uint64{f(snaps[0]), f(snaps[1]), f(snaps[2])} }
		verifyGrowth("OIP-EXT-STAT-005", c, "inference_count", of(func(s statSnap) uint64 { return s.inference }))
		verifyGrowth("OIP-EXT-STAT-006", c, "execution_count", of(func(s statSnap) uint64 { return s.execution }))
		VerifyReq("OIP-EXT-STAT-007", c).To(PassCheck(func(*pb.ModelStatisticsResponse) error { return lastInferenceErr(snaps[2].last, sent, answered) }))
		if VerifyReq("OIP-EXT-STAT-008", c).To(PassCheck(func(*pb.ModelStatisticsResponse) error {
			return errors.Join(snaps[1].nonDecreasing(snaps[0]), snaps[2].nonDecreasing(snaps[1]))
		})) {
			verifyGrowth("OIP-EXT-STAT-008", c, "inference_stats.success.count", of(func(s statSnap) uint64 { return s.success }))
		}
	})

	It("gives every version of a model its own ModelStatistics entry", Req("OIP-EXT-STAT-012"), func(ctx SpecContext) {
		if !Current().Deployed("versioned") { // as the REST spec above
			Note("OIP-EXT-STAT-012", "per-version entries not checked: fixture versioned is not deployed")
			return
		}
		if !Versions() {
			Skip(SkipNotApplicable + "versioned lists no versions")
		}
		md, mc := Invoke(ctx, "ModelMetadata", &pb.ModelMetadataRequest{Name: "versioned"}, Stub().ModelMetadata)
		if mc.Err != nil || len(md.GetVersions()) == 0 {
			Skip(SkipNotApplicable + "the metadata of versioned lists no versions")
		}
		r, c := grpcStats(ctx, "versioned")
		if !Verify(c).To(statsOf("versioned")) {
			return
		}
		if slices.ContainsFunc(r.GetModelStats(), func(m *pb.ModelStatistics) bool { return m.GetVersion() == "" }) {
			Verify(c).Soft("version is optional in a statistics entry").To(PassCheck(func(*pb.ModelStatisticsResponse) error {
				return fmt.Errorf("%d entries for the versions %q, some naming no version", len(r.GetModelStats()), md.GetVersions())
			}))
			return
		}
		Verify(c).To(PassCheck(func(r *pb.ModelStatisticsResponse) error {
			var missing []string
			for _, v := range md.GetVersions() {
				if !slices.ContainsFunc(r.GetModelStats(), func(m *pb.ModelStatistics) bool { return m.GetVersion() == v }) {
					missing = append(missing, v)
				}
			}
			if len(missing) > 0 {
				return fmt.Errorf("no entry for version(s) %q of the versions %q the metadata lists", missing, md.GetVersions())
			}
			return nil
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
