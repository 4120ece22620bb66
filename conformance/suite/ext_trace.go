package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	. "github.com/onsi/ginkgo/v2"

	. "github.com/oipkit/oipkit/conformance/engine"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// OIP-EXT-TRACE: the trace extension (Triton's): trace settings of the
// server (/v2/trace/setting) and of a model (/v2/models/{m}/trace/setting)
// over REST, TraceSetting over gRPC. Values are strings, trace_level an
// array of strings.
//
// Only trace_rate is changed on purpose, on the server and on add_sub; the
// specs put it back when they end (DeferCleanup): the value read first on
// the server, and null (follow the server) on add_sub.

// traceKeys are the settings every answer carries.
var traceKeys = []string{"trace_file", "trace_level", "trace_rate", "trace_count", "log_frequency"}

const traceGlobal = "/v2/trace/setting"

func traceModelPath(m string) string { return "/v2/models/" + PathEscape(m) + "/trace/setting" }

// The probe reads the server's settings over REST, then over gRPC.
var _ = RegisterProbe(specs.ExtTrace, func(ctx context.Context, p *Prober) ProbeResult {
	return p.RESTThenGRPC(ctx, func(ctx context.Context) ProbeResult {
		e := p.Get(ctx, traceGlobal)
		switch err := DecodeBody(e, &restTrace{}); {
		case e.Err != nil:
			return Unanswered()
		case err == nil, errors.Is(err, ErrBodyBreaksSchema) && bytes.HasPrefix(bytes.TrimSpace(e.Body), []byte("{")):
			// Settings, maybe of the wrong shapes, which the specs grade.
			return Observed(e, "GET /v2/trace/setting answered the trace settings")
		}
		return Absent(e, "GET /v2/trace/setting: %s", clipped(e.Got(), 160))
	}, func(ctx context.Context) ProbeResult {
		resp := &pb.TraceSettingResponse{}
		c := p.Call(ctx, "TraceSetting", &pb.TraceSettingRequest{}, resp)
		switch {
		case GRPCNoAnswer(c.Err) != nil:
			return Unanswered()
		case c.Err == nil && resp.GetSettings()["trace_level"] != nil:
			return Observed(c, "TraceSetting answered the trace settings")
		}
		return Absent(c, "TraceSetting{}: %s", clipped(c.Got(), 160))
	}, "no answer to the trace settings")
})

// traceSettings are settings as values: each a list of strings. Their
// shapes over REST (OIP-EXT-TRACE-002 for GET, -003 for the answer to a
// POST) are the schema's trace_settings; the specs read the values with
// restTrace and check what changed.
type traceSettings map[string][]string

// restTrace is what the specs read of REST trace settings: the defined
// settings, each a string or an array of strings. Other members are the
// server's own, which oip.TraceSettings, the client's reading,
// would refuse when they are not settings.
type restTrace struct {
	File         traceValue `json:"trace_file"`
	Level        traceValue `json:"trace_level"`
	Rate         traceValue `json:"trace_rate"`
	Count        traceValue `json:"trace_count"`
	LogFrequency traceValue `json:"log_frequency"`
}

func (r restTrace) settings() traceSettings {
	return traceSettings{oip.TraceFile: r.File, oip.TraceLevel: r.Level, oip.TraceRate: r.Rate, oip.TraceCount: r.Count, oip.TraceLogFrequency: r.LogFrequency}
}

// traceValue is a setting's value, a string or an array of strings, as a
// list.
type traceValue []string

func (v *traceValue) UnmarshalJSON(b []byte) error {
	var one string
	switch {
	case string(b) == "null":
		*v = nil
	case json.Unmarshal(b, &one) == nil:
		*v = traceValue{one}
	default:
		return json.Unmarshal(b, (*[]string)(v))
	}
	return nil
}

func postTrace(ctx context.Context, path, body string) *Exchange {
	return Send(ctx, traceUpdate(path, []byte(body))).(*Exchange)
}

// traceUpdate is postTrace's request, unsent.
func traceUpdate(path string, body []byte) *Exchange {
	return UnsentRequest(http.MethodPost, path, jsonHeader(), body)
}

// readTrace reads the settings answer e for c, a check of e (ReadBody: a
// body the schema refuses is graded by it, not here).
func readTrace(c *Check) (traceSettings, bool) {
	r, ok := ReadBody[restTrace](c)
	return r.settings(), ok
}

// traceBefore reads the settings at path that a spec compares with or puts
// back: ok is false when there is nothing to read (a finding of the spec's
// requirement when there is no answer; none when the schema refuses the
// body, which it grades).
func traceBefore(ctx context.Context, path string) (traceSettings, bool) {
	return readTrace(Verify(Get(ctx, path)))
}

// otherRate is a trace_rate different from cur.
func otherRate(cur []string) string {
	if slices.Equal(cur, []string{"1000"}) {
		return "999"
	}
	return "1000"
}

// sameExcept checks that only key differs between before and after.
func (after traceSettings) sameExcept(before traceSettings, key string) error {
	var list []error
	for _, k := range traceKeys {
		if k != key && !slices.Equal(before[k], after[k]) {
			list = append(list, fmt.Errorf("%s changed from %q to %q, but the update named only %s", k, before[k], after[k], key))
		}
	}
	return errors.Join(list...)
}

// restoreGlobalRate puts the server's trace_rate back when the spec ends.
func restoreGlobalRate(before traceSettings) {
	if len(before["trace_rate"]) != 1 {
		return
	}
	if Targeted(TransportREST) {
		PutBack(traceUpdate(traceGlobal, fmt.Appendf(nil, `{"trace_rate": %q}`, before["trace_rate"][0])))
		return
	}
	PutBack(UnsentCall("TraceSetting", grpcTraceRequest("", "trace_rate", before["trace_rate"]...)))
}

// clearModelRate lets add_sub's trace_rate follow the server's again when
// the spec ends.
func clearModelRate() {
	if Targeted(TransportREST) {
		PutBack(traceUpdate(traceModelPath("add_sub"), []byte(`{"trace_rate": null}`)))
		return
	}
	PutBack(UnsentCall("TraceSetting", grpcTraceRequest("add_sub", "trace_rate")))
}

var _ = Describe("REST trace", Over(TransportREST), Needs(specs.ExtTrace), func() {
	It("advertises trace in server metadata", Req("OIP-EXT-TRACE-001"), func(ctx SpecContext) {
		Verify(Get(ctx, "/v2")).To(PassCheck(func(o *Object) error {
			skipUnknownSupport(specs.ExtTrace)
			exts, err := extensionsField(o.Members)
			if err != nil {
				return err
			}
			return advertisedErr(exts, specs.ExtTrace)
		}))
	})

	It("answers the server's and a model's trace settings with string values", Req("OIP-EXT-TRACE-002"), func(ctx SpecContext) {
		Verify(Get(ctx, traceGlobal)).To(MatchSchema())
		NeedFixture("add_sub")
		Verify(Get(ctx, traceModelPath("add_sub"))).To(MatchSchema())
	})

	It("changes only the settings a POST names and answers with the settings", Req("OIP-EXT-TRACE-003"), func(ctx SpecContext) {
		before, ok := traceBefore(ctx, traceGlobal)
		if !ok {
			return
		}
		restoreGlobalRate(before)
		want := otherRate(before["trace_rate"])
		check := func(e *Exchange) bool {
			after, ok := readTrace(Verify(e))
			return ok && Verify(e).To(PassCheck(func(*Exchange) error {
				if !slices.Equal(after["trace_rate"], []string{want}) {
					return fmt.Errorf("trace_rate is %q after setting it to %q", after["trace_rate"], want)
				}
				return after.sameExcept(before, "trace_rate")
			}))
		}
		if check(postTrace(ctx, traceGlobal, fmt.Sprintf(`{"trace_rate": %q}`, want))) {
			check(Get(ctx, traceGlobal)) // a later GET must agree with the update
		}
	})

	It("clears a model setting with null, so that the server's applies", Req("OIP-EXT-TRACE-004"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		global, ok := traceBefore(ctx, traceGlobal)
		if !ok {
			return
		}
		before, ok := traceBefore(ctx, traceModelPath("add_sub"))
		if !ok {
			return
		}
		clearModelRate()
		own := "5"
		if slices.Equal(global["trace_rate"], []string{own}) {
			own = "6"
		}
		set := postTrace(ctx, traceModelPath("add_sub"), fmt.Sprintf(`{"trace_rate": %q}`, own))
		after, ok := readTrace(Verify(set))
		if !ok || !Verify(set).To(PassCheck(func(*Exchange) error {
			if !slices.Equal(after["trace_rate"], []string{own}) {
				return fmt.Errorf("add_sub's trace_rate is %q after setting it to %q", after["trace_rate"], own)
			}
			// The other settings are the model's own or, at a first
			// update, copied from the server's: unchanged either way.
			return after.sameExcept(before, "trace_rate")
		})) {
			return
		}
		cleared := postTrace(ctx, traceModelPath("add_sub"), `{"trace_rate": null}`)
		if after, ok := readTrace(Verify(cleared)); ok {
			Verify(cleared).To(PassCheck(func(*Exchange) error {
				if !slices.Equal(after["trace_rate"], global["trace_rate"]) {
					return fmt.Errorf("add_sub's trace_rate is %q after clearing it, want the server's %q", after["trace_rate"], global["trace_rate"])
				}
				return nil
			}))
		}
	})

	It("answers a refused update with an error status and {\"error\": string}", Req("OIP-EXT-TRACE-005"), func(ctx SpecContext) {
		// The settings to put back; none when the schema refuses the body
		// (it grades it).
		e := Get(ctx, traceGlobal)
		var read restTrace
		err := DecodeBody(e, &read)
		before := read.settings()
		if !errors.Is(err, ErrBodyBreaksSchema) && !Verify(e).To(PassCheck(func(*Exchange) error { return err }), "the trace settings must be readable to put them back") {
			return
		}
		if levels, jerr := json.Marshal(before["trace_level"]); err == nil && jerr == nil {
			PutBack(traceUpdate(traceGlobal, fmt.Appendf(nil, `{"trace_level": %s}`, levels)))
		}
		AfterNegative()
		Verify(postTrace(ctx, traceGlobal, `{"trace_level": ["BOGUS"]}`)).Soft("the catalog's test is soft").To(BeErrorResponse())
	})

	It("answers an update whose body is not JSON with an error status and {\"error\": string}", Req("OIP-EXT-TRACE-005"), func(ctx SpecContext) {
		AfterNegative()
		Verify(postTrace(ctx, traceGlobal, `{"trace_rate":`)).To(BeErrorResponse())
	})

	It("answers the settings of an unknown model with an error status and {\"error\": string}", Req("OIP-EXT-TRACE-005"), func(ctx SpecContext) {
		AfterNegative()
		Verify(Get(ctx, traceModelPath("does_not_exist"))).To(BeErrorResponse())
	})
})

// grpcTrace reads a TraceSetting answer.
func grpcTrace(r *pb.TraceSettingResponse) (traceSettings, error) {
	out := traceSettings{}
	for k, v := range r.GetSettings() {
		out[k] = v.GetValue()
	}
	if _, ok := out["trace_rate"]; !ok {
		return out, fmt.Errorf("settings[\"trace_rate\"] is missing (settings: %v)", out)
	}
	return out, nil
}

var _ = Describe("gRPC trace", Over(TransportGRPC), Needs(specs.ExtTrace), func() {
	It("advertises trace in server metadata", Req("OIP-EXT-TRACE-001"), func(ctx SpecContext) {
		_, c := Invoke(ctx, "ServerMetadata", &pb.ServerMetadataRequest{}, Stub().ServerMetadata)
		Verify(c).To(PassCheck(func(m *pb.ServerMetadataResponse) error {
			return advertisedErr(m.GetExtensions(), specs.ExtTrace)
		}))
	})

	It("changes a setting with TraceSetting and clears a model's with an empty value", Req("OIP-EXT-TRACE-006"), func(ctx SpecContext) {
		var before traceSettings
		_, c := Invoke(ctx, "TraceSetting", &pb.TraceSettingRequest{}, Stub().TraceSetting)
		if !Verify(c).To(PassCheck(func(r *pb.TraceSettingResponse) error {
			var err error
			before, err = grpcTrace(r)
			return err
		}), "an empty TraceSetting request must answer the server's settings") {
			return
		}
		restoreGlobalRate(before)
		want := otherRate(before["trace_rate"])
		check := func(r *pb.TraceSettingResponse) error {
			after, err := grpcTrace(r)
			if err != nil {
				return err
			}
			if !slices.Equal(after["trace_rate"], []string{want}) {
				return fmt.Errorf("trace_rate is %q after setting it to %q", after["trace_rate"], want)
			}
			return after.sameExcept(before, "trace_rate")
		}
		_, c = Invoke(ctx, "TraceSetting", &pb.TraceSettingRequest{Settings: map[string]*pb.TraceSettingRequest_SettingValue{
			"trace_rate": {Value: []string{want}}}}, Stub().TraceSetting)
		if !Verify(c).To(PassCheck(check)) {
			return
		}
		_, c = Invoke(ctx, "TraceSetting", &pb.TraceSettingRequest{}, Stub().TraceSetting)
		Verify(c).To(PassCheck(check), "a later read must agree with the update")

		if !Current().Deployed("add_sub") {
			return
		}
		clearModelRate()
		model := func(v ...string) *pb.TraceSettingRequest {
			return &pb.TraceSettingRequest{ModelName: "add_sub", Settings: map[string]*pb.TraceSettingRequest_SettingValue{"trace_rate": {Value: v}}}
		}
		_, c = Invoke(ctx, "TraceSetting", model("5"), Stub().TraceSetting)
		if !Verify(c).To(PassCheck(func(r *pb.TraceSettingResponse) error {
			s, err := grpcTrace(r)
			if err == nil && !slices.Equal(s["trace_rate"], []string{"5"}) {
				err = fmt.Errorf("add_sub's trace_rate is %q after setting it to \"5\"", s["trace_rate"])
			}
			return err
		})) {
			return
		}
		_, c = Invoke(ctx, "TraceSetting", model(), Stub().TraceSetting)
		Verify(c).To(PassCheck(func(r *pb.TraceSettingResponse) error {
			s, err := grpcTrace(r)
			if err == nil && !slices.Equal(s["trace_rate"], []string{want}) {
				err = fmt.Errorf("add_sub's trace_rate is %q after clearing it with an empty value, want the server's %q", s["trace_rate"], want)
			}
			return err
		}))
	})
})

// Every setting in the spellings and types its definition does not allow,
// a spec each: refused, taken as meant (lenient) or graded as a broken
// update; the values and the grading are in ext_settings.go.
var _ = Describe("REST trace settings in other spellings", Over(TransportREST), Needs(specs.ExtTrace), func() {
	all := append(append(traceLevelSpellings(), traceCountSpellings()...), traceUnknownSpelling())
	for _, s := range all {
		It(s.title(), Req("OIP-EXT-TRACE-005", "OIP-EXT-TRACE-003", "OIP-EXT-TRACE-007"), func(ctx SpecContext) { restTraceRoute.try(ctx, s) })
	}
})

var _ = Describe("gRPC trace settings malformed", Over(TransportGRPC), Needs(specs.ExtTrace), func() {
	for _, s := range grpcTraceSpellings() {
		It(s.title(), Req("OIP-EXT-TRACE-006", "OIP-EXT-TRACE-007"), func(ctx SpecContext) { grpcTraceRoute.try(ctx, s) })
	}
})
