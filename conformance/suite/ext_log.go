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

	. "github.com/onsi/ginkgo/v2"
	"google.golang.org/protobuf/proto"

	. "github.com/oipkit/oipkit/conformance/engine"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// OIP-EXT-LOG: the logging extension (Triton's): the server's log settings,
// GET/POST /v2/logging over REST and LogSettings over gRPC.
//
// Specs that change a setting put back the value they read first when they
// end (DeferCleanup), whatever happened: the suite also runs against
// production servers. Only log_verbose_level is changed on purpose; the
// specs that send a refused value restore the setting they tried in case
// the server took it.

// The probe reads the settings over REST, then over gRPC.
var _ = RegisterProbe(specs.ExtLogging, func(ctx context.Context, p *Prober) ProbeResult {
	return p.RESTThenGRPC(ctx, func(ctx context.Context) ProbeResult {
		e := p.Get(ctx, "/v2/logging")
		var s oip.LogSettings
		switch err := DecodeBody(e, &s); {
		case e.Err != nil:
			return Unanswered()
		case err == nil, errors.Is(err, ErrBodyBreaksSchema) && bytes.HasPrefix(bytes.TrimSpace(e.Body), []byte("{")):
			// Settings, maybe of the wrong shapes, which the specs grade.
			return Observed(e, "GET /v2/logging answered the log settings")
		}
		return Absent(e, "GET /v2/logging: %s", clipped(e.Got(), 160))
	}, func(ctx context.Context) ProbeResult {
		resp := &pb.LogSettingsResponse{}
		c := p.Call(ctx, "LogSettings", &pb.LogSettingsRequest{}, resp)
		switch {
		case GRPCNoAnswer(c.Err) != nil:
			return Unanswered()
		case c.Err == nil && resp.GetSettings()["log_verbose_level"] != nil:
			return Observed(c, "LogSettings answered the log settings")
		}
		return Absent(c, "LogSettings{}: %s", clipped(c.Got(), 160))
	}, "no answer to the log settings")
})

// The settings' shapes (OIP-EXT-LOG-002 for GET, -003 for the answer to a
// POST) are the schema's log_settings: the specs read values with
// oip.LogSettings and check what changed.

// postLog sends POST /v2/logging with body.
func postLog(ctx context.Context, body string) *Exchange {
	return Send(ctx, logUpdate([]byte(body))).(*Exchange)
}

// logUpdate is postLog's request, unsent.
func logUpdate(body []byte) *Exchange {
	return UnsentRequest(http.MethodPost, "/v2/logging", jsonHeader(), body)
}

// restoreLog puts setting back to value, read before the spec changed it,
// when the spec ends (and after a finding's reproducer).
func restoreLog(setting string, value any) {
	body, err := json.Marshal(map[string]any{setting: value})
	if err != nil {
		panic(fmt.Sprintf("conformance: encode log setting %s: %v", setting, err))
	}
	PutBack(logUpdate(body))
}

// logBefore reads the settings a spec puts back when it ends. ok is false
// when there is no answer (a finding of the spec's requirement); readable is
// false when the body is not settings the schema accepts (graded by it):
// the spec goes on, with nothing to put back.
func logBefore(ctx context.Context) (s oip.LogSettings, readable, ok bool) {
	e := Get(ctx, "/v2/logging")
	var err error
	if err = DecodeBody(e, &s); errors.Is(err, ErrBodyBreaksSchema) {
		return s, false, true
	}
	return s, err == nil, Verify(e).To(PassCheck(func(*Exchange) error { return err }), "the log settings must be readable for the update to be checked")
}

// changedSettings lists the settings other than log_verbose_level that
// differ between before and after.
func changedSettings(before, after oip.LogSettings) error {
	var list []error
	for _, c := range []struct {
		name string
		b, a any
	}{
		{"log_file", before.File, after.File},
		{"log_info", before.Info, after.Info},
		{"log_warning", before.Warning, after.Warning},
		{"log_error", before.Error, after.Error},
		{"log_format", before.Format, after.Format},
	} {
		if c.a != c.b {
			list = append(list, fmt.Errorf("%s changed from %v to %v, but the update named only log_verbose_level", c.name, c.b, c.a))
		}
	}
	return errors.Join(list...)
}

// otherLevel is a verbose level different from the current one.
func otherLevel(cur uint64) uint64 {
	if cur == 1 {
		return 2
	}
	return 1
}

var _ = Describe("REST logging", Over(TransportREST), Needs(specs.ExtLogging), func() {
	It("advertises logging in server metadata", Req("OIP-EXT-LOG-001"), func(ctx SpecContext) {
		Verify(Get(ctx, "/v2")).To(PassCheck(func(o *Object) error {
			skipUnknownSupport(specs.ExtLogging)
			exts, err := extensionsField(o.Members)
			if err != nil {
				return err
			}
			return advertisedErr(exts, specs.ExtLogging)
		}))
	})

	It("answers GET /v2/logging with the six log settings and their types", Req("OIP-EXT-LOG-002"), func(ctx SpecContext) {
		Verify(Get(ctx, "/v2/logging")).To(MatchSchema())
	})

	It("changes only the settings a POST names and answers with all of them", Req("OIP-EXT-LOG-003"), func(ctx SpecContext) {
		before, readable, ok := logBefore(ctx)
		if !ok || !readable {
			return
		}
		restoreLog("log_verbose_level", before.VerboseLevel)
		want := uint32(otherLevel(uint64(before.VerboseLevel)))
		check := func(e *Exchange) bool {
			after, ok := ReadBody[oip.LogSettings](Verify(e))
			return ok && Verify(e).To(PassCheck(func(*Exchange) error {
				if after.VerboseLevel != want {
					return errors.Join(fmt.Errorf("log_verbose_level is %d after setting it to %d", after.VerboseLevel, want), changedSettings(before, after))
				}
				return changedSettings(before, after)
			}))
		}
		if check(postLog(ctx, fmt.Sprintf(`{"log_verbose_level": %d}`, want))) {
			check(Get(ctx, "/v2/logging")) // a later GET must agree with the update
		}
	})

	It("refuses to change log_file", Req("OIP-EXT-LOG-004"), func(ctx SpecContext) {
		before, readable, ok := logBefore(ctx)
		if !ok {
			return
		}
		if readable {
			restoreLog("log_file", before.File)
		}
		AfterNegative()
		Verify(postLog(ctx, `{"log_file": "/var/log/oipkit-conformance.log"}`)).To(BeRejected())
	})

	It("refuses a negative log_verbose_level", Req("OIP-EXT-LOG-005"), func(ctx SpecContext) {
		before, readable, ok := logBefore(ctx)
		if !ok {
			return
		}
		if readable {
			restoreLog("log_verbose_level", before.VerboseLevel)
		}
		AfterNegative()
		Verify(postLog(ctx, `{"log_verbose_level": -1}`)).To(BeRejected())
	})

	It("answers a refused update with an error status and {\"error\": string}", Req("OIP-EXT-LOG-006"), func(ctx SpecContext) {
		before, readable, ok := logBefore(ctx)
		if !ok {
			return
		}
		if readable {
			restoreLog("log_format", before.Format)
		}
		AfterNegative()
		Verify(postLog(ctx, `{"log_format": "xml"}`)).Soft("the catalog's test is soft").To(BeErrorResponse())
	})

	It("answers an update whose body is not JSON with an error status and {\"error\": string}", Req("OIP-EXT-LOG-006"), func(ctx SpecContext) {
		AfterNegative()
		Verify(postLog(ctx, `{"log_info":`)).To(BeErrorResponse())
	})

	It("answers an update whose setting has the wrong type with an error status and {\"error\": string}", Req("OIP-EXT-LOG-006"), func(ctx SpecContext) {
		before, readable, ok := logBefore(ctx)
		if !ok {
			return
		}
		if readable {
			restoreLog("log_verbose_level", before.VerboseLevel)
		}
		AfterNegative()
		// log_verbose_level is an integer (OIP-EXT-LOG-002): no server reads "loud" as one.
		Verify(postLog(ctx, `{"log_verbose_level": "loud"}`)).To(BeErrorResponse())
	})
})

// grpcLogLevel reads log_verbose_level from a LogSettings answer after
// checking that it carries all six settings with their types.
func grpcLogLevel(r *pb.LogSettingsResponse) (uint32, error) {
	m := r.GetSettings()
	var list []error
	kind := func(k, want string, ok bool) {
		if _, present := m[k]; !present {
			list = append(list, fmt.Errorf("settings[%q] is missing", k))
		} else if !ok {
			list = append(list, fmt.Errorf("settings[%q] is %v, want a %s", k, m[k], want))
		}
	}
	for _, k := range []string{"log_file", "log_format"} {
		_, ok := m[k].GetParameterChoice().(*pb.LogSettingsResponse_SettingValue_StringParam)
		kind(k, "string_param", ok)
	}
	for _, k := range []string{"log_info", "log_warning", "log_error"} {
		_, ok := m[k].GetParameterChoice().(*pb.LogSettingsResponse_SettingValue_BoolParam)
		kind(k, "bool_param", ok)
	}
	level, ok := m["log_verbose_level"].GetParameterChoice().(*pb.LogSettingsResponse_SettingValue_Uint32Param)
	kind("log_verbose_level", "uint32_param", ok)
	if err := errors.Join(list...); err != nil {
		return 0, err
	}
	return level.Uint32Param, nil
}

var _ = Describe("gRPC logging", Over(TransportGRPC), Needs(specs.ExtLogging), func() {
	It("advertises logging in server metadata", Req("OIP-EXT-LOG-001"), func(ctx SpecContext) {
		_, c := Invoke(ctx, "ServerMetadata", &pb.ServerMetadataRequest{}, Stub().ServerMetadata)
		Verify(c).To(PassCheck(func(m *pb.ServerMetadataResponse) error {
			return advertisedErr(m.GetExtensions(), specs.ExtLogging)
		}))
	})

	It("changes log_verbose_level with a uint32_param and answers every setting", Req("OIP-EXT-LOG-007"), func(ctx SpecContext) {
		first, c := Invoke(ctx, "LogSettings", &pb.LogSettingsRequest{}, Stub().LogSettings)
		var before uint32
		if !Verify(c).To(PassCheck(func(r *pb.LogSettingsResponse) error {
			var err error
			before, err = grpcLogLevel(r)
			return err
		}), "an empty LogSettings request must answer the current settings") {
			return
		}
		PutBack(UnsentCall("LogSettings", grpcLogRequest("log_verbose_level", &pb.LogSettingsRequest_SettingValue{
			ParameterChoice: &pb.LogSettingsRequest_SettingValue_Uint32Param{Uint32Param: before}})))
		want := uint32(otherLevel(uint64(before)))
		check := func(r *pb.LogSettingsResponse) error {
			level, err := grpcLogLevel(r)
			if err != nil {
				return err
			}
			if level != want {
				return fmt.Errorf("log_verbose_level is %d after setting it to %d", level, want)
			}
			for _, k := range slices.Sorted(maps.Keys(first.GetSettings())) {
				if k != "log_verbose_level" && !equalSetting(first.GetSettings()[k], r.GetSettings()[k]) {
					return fmt.Errorf("settings[%q] changed from %v to %v, but the update named only log_verbose_level", k, first.GetSettings()[k], r.GetSettings()[k])
				}
			}
			return nil
		}
		_, c = Invoke(ctx, "LogSettings", &pb.LogSettingsRequest{Settings: map[string]*pb.LogSettingsRequest_SettingValue{
			"log_verbose_level": {ParameterChoice: &pb.LogSettingsRequest_SettingValue_Uint32Param{Uint32Param: want}}}}, Stub().LogSettings)
		if Verify(c).To(PassCheck(check)) {
			_, c = Invoke(ctx, "LogSettings", &pb.LogSettingsRequest{}, Stub().LogSettings)
			Verify(c).To(PassCheck(check), "a later read must agree with the update")
		}
	})
})

func equalSetting(a, b *pb.LogSettingsResponse_SettingValue) bool { return proto.Equal(a, b) }

// Every setting in the spellings and types its definition does not allow,
// a spec each: refused, taken as meant (lenient) or graded as a broken
// update; the values and the grading are in ext_settings.go.
var _ = Describe("REST logging settings in other spellings", Over(TransportREST), Needs(specs.ExtLogging), func() {
	var all []spelling
	for _, k := range []string{oip.LogInfo, oip.LogWarning, oip.LogError} {
		all = append(all, logBoolSpellings(k)...)
	}
	all = append(append(append(all, logLevelSpellings()...), logFormatSpellings()...), logUnknownSpelling())
	for _, s := range all {
		It(s.title(), Req("OIP-EXT-LOG-006", "OIP-EXT-LOG-003", "OIP-EXT-LOG-008"), func(ctx SpecContext) { restLogRoute.try(ctx, s) })
	}
})

var _ = Describe("gRPC logging settings in the wrong SettingValue", Over(TransportGRPC), Needs(specs.ExtLogging), func() {
	for _, s := range grpcLogSpellings() {
		It(s.title(), Req("OIP-EXT-LOG-007", "OIP-EXT-LOG-008"), func(ctx SpecContext) { grpcLogRoute.try(ctx, s) })
	}
})
