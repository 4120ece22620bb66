package suite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/onsi/gomega/types"

	. "github.com/oipkit/oipkit/conformance/engine"
	"github.com/oipkit/oipkit/oip"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// OIP-EXT-LOG and OIP-EXT-TRACE: every setting of the logging and trace
// extensions sent in the spellings and types their definitions do not
// allow (TR-LOG: log_info/log_warning/log_error booleans,
// log_verbose_level an integer >= 0, log_format "default" or "ISO8601";
// TR-TRACE: string values, trace_level an array of OFF/TIMESTAMPS/TENSORS;
// over gRPC each in its SettingValue).
//
// How each answer is graded, the same for every value:
//   - refused: the error route's rule (OIP-EXT-LOG-006, -TRACE-005 over
//     REST: a 4xx with {"error": string}; -LOG-007, -TRACE-006 over gRPC: a
//     client error code). A 5xx, INTERNAL or UNKNOWN is the server's fault
//     (BeRejected in an extension spec).
//   - accepted, and the answer and a later read show the value the
//     spelling obviously means (spelling.meant): lenient, under the rule
//     that binds clients to the definitions' spellings (OIP-EXT-LOG-008,
//     -TRACE-007).
//   - accepted, and the setting is of the wrong type (the schema grades the
//     body), changed to a value the request did not mean, unchanged while
//     the answer claims the update, or another setting changed: a failure
//     of the update rule (OIP-EXT-LOG-003, -TRACE-003 over REST; -LOG-007,
//     -TRACE-006 over gRPC).
//
// Every setting a spec may change is put back to the value read before it
// when the spec ends (DeferCleanup): other specs read them.

// unchanged is the meaning of a spelling that obviously asks for no change
// (a null boolean, an unknown key).
const unchanged = "(unchanged)"

// spelling is an update naming one setting in a spelling its definition
// does not allow.
type spelling struct {
	key    string // the setting it names
	update any    // REST: the JSON body; gRPC: the request message
	shown  string // the value as sent, for messages
	// rule is what the definition says of the setting (for messages).
	rule string
	// meant is the value the spelling obviously means, in the route's
	// canonical form (JSON); "" when it means none, so that only a refusal
	// is right; unchanged when it means no change.
	meant string
	// other is a valid value of key (canonical), set first when the
	// setting holds meant already, so that the update can be seen.
	other string
	// allowed: the definition allows the value; kept as meant, it is no
	// finding (log_verbose_level 4294967296 is an integer >= 0 over REST).
	allowed bool
}

// settingsRoute is one settings route over one transport, as the
// spelling checks use it.
type settingsRoute struct {
	// errReq grades a refusal, stateReq an accepted update, clientReq the
	// leniency of taking a spelling the definition does not allow.
	errReq, stateReq, clientReq string
	keys                        []string // the defined settings
	get                         func(ctx context.Context) Evidencer
	// request is the update's request, unsent (UnsentRequest or
	// UnsentCall): post sends it, and a reproducer's clean-up can.
	request func(update any) Evidencer
	// values reads the settings an answer reports, each in canonical form;
	// false when they cannot be read (recorded under c's requirement, or
	// graded by the schema).
	values func(c *Check) (map[string]string, bool)
	// refused reports whether x is a refusal (or no answer), and refusal
	// is the matcher that grades one.
	refused func(x Evidencer) bool
	refusal func() types.GomegaMatcher
	// form is the update setting key to value (canonical).
	form func(key, value string) any
}

// post sends update.
func (r settingsRoute) post(ctx context.Context, update any) Evidencer {
	return Send(ctx, r.request(update))
}

// try sends s and grades what the server did with it. Each spelling is a
// spec of its own: a server that dies on one is named with that request
// (the spec's last before its liveness check).
func (r settingsRoute) try(ctx context.Context, s spelling) {
	before, ok := r.values(VerifyReq(r.stateReq, r.get(ctx)))
	if !ok {
		return
	}
	defined := slices.Contains(r.keys, s.key)
	if v := before[s.key]; defined && v != "" && v != "null" {
		PutBack(r.request(r.form(s.key, before[s.key])))
	}
	if defined && s.meant == before[s.key] && s.other != "" {
		o := r.post(ctx, r.form(s.key, s.other))
		ReplaySetup(o, func() string { return Reproducer(o) }, "")
		if before, ok = r.values(VerifyReq(r.stateReq, r.get(ctx))); !ok {
			return
		}
		if before[s.key] == s.meant {
			// A valid update that did not take is the update specs' finding.
			Note(r.clientReq, "%s stayed %s after setting it to %s: %s = %s is not tried", s.key, s.meant, s.other, s.key, s.shown)
			return
		}
	}
	// The liveness check after the spelling runs before the restores
	// (registered first): a server that dies on it is named with it.
	AfterNegative()
	x := r.post(ctx, s.update)
	if r.refused(x) {
		VerifyReq(r.errReq, x).To(r.refusal())
		return
	}
	lenient := true
	judge := func(c *Check, description ...any) bool {
		got, ok := r.values(c)
		if !ok {
			return false
		}
		l, err := s.judge(r.keys, before, got)
		lenient = lenient && l
		return c.To(PassCheck(func(Evidencer) error { return err }), description...)
	}
	if !judge(VerifyReq(r.stateReq, x)) || !judge(VerifyReq(r.stateReq, r.get(ctx)), "a later read must agree with the update") {
		return
	}
	if lenient {
		VerifyReq(r.clientReq, x).To(BeRejected(), fmt.Sprintf("%s = %s is not in the definition (%s); the server took it as %s", s.key, s.shown, s.rule, s.meant))
	}
}

// judge checks the settings got that an accepted update of s left, against
// before; lenient is true when they are what s obviously means.
func (s spelling) judge(keys []string, before, got map[string]string) (lenient bool, err error) {
	var list []error
	for _, k := range keys {
		if k != s.key && got[k] != before[k] {
			list = append(list, fmt.Errorf("%s changed from %s to %s, but the update named only %s", k, before[k], got[k], s.key))
		}
	}
	was, now := before[s.key], got[s.key]
	switch {
	case !slices.Contains(keys, s.key):
		lenient = true // an unknown key changed nothing else
	case s.meant == "":
		list = append(list, fmt.Errorf("%s = %s was answered as an update, but the definition gives it no meaning (%s): %s is %s (was %s)", s.key, s.shown, s.rule, s.key, now, was))
	case s.meant == unchanged && now != was:
		list = append(list, fmt.Errorf("%s changed from %s to %s after %s = %s, which asks for no change", s.key, was, now, s.key, s.shown))
	case s.meant == unchanged:
		lenient = true
	case now == s.meant:
		lenient = !s.allowed
	case now == was:
		list = append(list, fmt.Errorf("%s is still %s after %s = %s was answered as an update (it means %s)", s.key, now, s.key, s.shown, s.meant))
	default:
		list = append(list, fmt.Errorf("%s is %s after %s = %s, which means %s", s.key, now, s.key, s.shown, s.meant))
	}
	if err := errors.Join(list...); err != nil {
		return false, err
	}
	return lenient, nil
}

// canonical is v as JSON, the form the checks compare values in.
func canonical(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("conformance: encode a setting: %v", err))
	}
	return string(b)
}

// restRefused: an error status, or no answer (graded by the refusal check).
func restRefused(x Evidencer) bool {
	e := x.(*Exchange)
	return e.Err != nil || e.Status >= 400
}

func grpcRefused(x Evidencer) bool { return x.(*Call).Err != nil }

// ----- logging -----

var logKeys = []string{oip.LogFile, oip.LogInfo, oip.LogWarning, oip.LogError, oip.LogVerboseLevel, oip.LogFormat}

// restLogValues reads REST log settings; the level is read wide, so that
// a server keeping 4294967296 as sent is seen doing so.
type restLogValues struct {
	File         string `json:"log_file"`
	Info         bool   `json:"log_info"`
	Warning      bool   `json:"log_warning"`
	Error        bool   `json:"log_error"`
	VerboseLevel uint64 `json:"log_verbose_level"`
	Format       string `json:"log_format"`
}

var restLogRoute = settingsRoute{
	errReq: "OIP-EXT-LOG-006", stateReq: "OIP-EXT-LOG-003", clientReq: "OIP-EXT-LOG-008",
	keys:    logKeys,
	get:     func(ctx context.Context) Evidencer { return Get(ctx, "/v2/logging") },
	request: func(u any) Evidencer { return logUpdate([]byte(u.(string))) },
	values: func(c *Check) (map[string]string, bool) {
		s, ok := ReadBody[restLogValues](c)
		return map[string]string{
			oip.LogFile: canonical(s.File), oip.LogInfo: canonical(s.Info), oip.LogWarning: canonical(s.Warning),
			oip.LogError: canonical(s.Error), oip.LogVerboseLevel: canonical(s.VerboseLevel), oip.LogFormat: canonical(s.Format),
		}, ok
	},
	refused: restRefused,
	refusal: BeErrorResponse,
	form:    func(key, value string) any { return fmt.Sprintf(`{%q: %s}`, key, value) },
}

// restLog is the REST update of one log setting to value, as JSON text.
func restLog(key, value, rule, meant, other string) spelling {
	return spelling{key: key, update: fmt.Sprintf(`{%q: %s}`, key, value), shown: value, rule: rule, meant: meant, other: other}
}

// logBoolSpellings are a boolean setting's value in other types: the
// string "true" and the number 1 obviously mean true; null asks for no
// change.
func logBoolSpellings(key string) []spelling {
	const rule = "a boolean"
	return []spelling{
		restLog(key, `"true"`, rule, "true", "false"),
		restLog(key, `1`, rule, "true", "false"),
		restLog(key, `null`, rule, unchanged, ""),
	}
}

// logLevelSpellings are log_verbose_level in other types.
func logLevelSpellings() []spelling {
	const rule = "an integer >= 0"
	wide := restLog(oip.LogVerboseLevel, `4294967296`, rule, "4294967296", "")
	// An integer >= 0, so allowed over REST, but beyond the uint32 of
	// gRPC's uint32_param: refused, or kept exactly; wrapped to 0 is a
	// value the request did not mean.
	wide.allowed = true
	return []spelling{
		restLog(oip.LogVerboseLevel, `"1"`, rule, "1", "2"),
		// 1.5 and true are no level: rounding or reading true as 1 is a
		// guess, so only a refusal is right.
		restLog(oip.LogVerboseLevel, `1.5`, rule, "", ""),
		restLog(oip.LogVerboseLevel, `true`, rule, "", ""),
		wide,
	}
}

// logFormatSpellings are log_format in other spellings: a case variant
// obviously means the format; others mean none.
func logFormatSpellings() []spelling {
	const rule = `"default" or "ISO8601"`
	return []spelling{
		restLog(oip.LogFormat, `"iso8601"`, rule, `"ISO8601"`, `"default"`),
		restLog(oip.LogFormat, `"Default"`, rule, `"default"`, `"ISO8601"`),
		restLog(oip.LogFormat, `"xml"`, rule, "", ""),
		restLog(oip.LogFormat, `1`, rule, "", ""),
	}
}

// logUnknownSpelling names a setting the extension does not define: ignored,
// it is lenient.
func logUnknownSpelling() spelling {
	return restLog("oipkit_unknown_setting", `true`, "not a log setting", unchanged, "")
}

// title is the text of the spec that tries s.
func (s spelling) title() string {
	switch {
	case s.meant == "":
		return fmt.Sprintf("refuses %s = %s (%s)", s.key, s.shown, s.rule)
	case s.meant == unchanged:
		return fmt.Sprintf("refuses %s = %s (%s), or ignores it", s.key, s.shown, s.rule)
	case s.allowed:
		return fmt.Sprintf("refuses %s = %s, or keeps it as %s", s.key, s.shown, s.meant)
	}
	return fmt.Sprintf("refuses %s = %s (%s), or takes it as %s", s.key, s.shown, s.rule, s.meant)
}

// grpcLogValue is a gRPC setting value in canonical form: its oneof's
// value as JSON (a string_param "true" reads "\"true\"", not true).
func grpcLogValue(v *pb.LogSettingsResponse_SettingValue) string {
	switch c := v.GetParameterChoice().(type) {
	case *pb.LogSettingsResponse_SettingValue_BoolParam:
		return canonical(c.BoolParam)
	case *pb.LogSettingsResponse_SettingValue_Uint32Param:
		return canonical(c.Uint32Param)
	case *pb.LogSettingsResponse_SettingValue_StringParam:
		return canonical(c.StringParam)
	}
	return "null"
}

// grpcLogRequest is a LogSettings request setting key to v.
func grpcLogRequest(key string, v *pb.LogSettingsRequest_SettingValue) *pb.LogSettingsRequest {
	return &pb.LogSettingsRequest{Settings: map[string]*pb.LogSettingsRequest_SettingValue{key: v}}
}

var grpcLogRoute = settingsRoute{
	errReq: "OIP-EXT-LOG-007", stateReq: "OIP-EXT-LOG-007", clientReq: "OIP-EXT-LOG-008",
	keys: logKeys,
	get: func(ctx context.Context) Evidencer {
		_, c := Invoke(ctx, "LogSettings", &pb.LogSettingsRequest{}, Stub().LogSettings)
		return c
	},
	request: func(u any) Evidencer { return UnsentCall("LogSettings", u.(*pb.LogSettingsRequest)) },
	values: func(c *Check) (map[string]string, bool) {
		out := map[string]string{}
		ok := c.To(PassCheck(func(r *pb.LogSettingsResponse) error {
			for k, v := range r.GetSettings() {
				out[k] = grpcLogValue(v)
			}
			return nil
		}))
		return out, ok
	},
	refused: grpcRefused,
	refusal: BeRejected,
	form: func(key, value string) any {
		var v any
		if json.Unmarshal([]byte(value), &v) != nil {
			return grpcLogRequest(key, nil)
		}
		switch t := v.(type) {
		case bool:
			return grpcLogRequest(key, &pb.LogSettingsRequest_SettingValue{ParameterChoice: &pb.LogSettingsRequest_SettingValue_BoolParam{BoolParam: t}})
		case float64:
			return grpcLogRequest(key, &pb.LogSettingsRequest_SettingValue{ParameterChoice: &pb.LogSettingsRequest_SettingValue_Uint32Param{Uint32Param: uint32(t)}})
		case string:
			return grpcLogRequest(key, &pb.LogSettingsRequest_SettingValue{ParameterChoice: &pb.LogSettingsRequest_SettingValue_StringParam{StringParam: t}})
		}
		return grpcLogRequest(key, nil)
	},
}

// grpcLogSpellings are LogSettings requests with a setting in the wrong
// parameter of SettingValue, an unknown setting and log_file.
func grpcLogSpellings() []spelling {
	str := func(s string) *pb.LogSettingsRequest_SettingValue {
		return &pb.LogSettingsRequest_SettingValue{ParameterChoice: &pb.LogSettingsRequest_SettingValue_StringParam{StringParam: s}}
	}
	return []spelling{
		// The string "true" obviously means true.
		{key: oip.LogInfo, update: grpcLogRequest(oip.LogInfo, str("true")), shown: `string_param "true"`, rule: "a bool_param", meant: "true", other: "false"},
		// A bool is no level, a number no format: only a refusal is right.
		{key: oip.LogVerboseLevel, update: grpcLogRequest(oip.LogVerboseLevel, &pb.LogSettingsRequest_SettingValue{
			ParameterChoice: &pb.LogSettingsRequest_SettingValue_BoolParam{BoolParam: true}}), shown: "bool_param true", rule: "a uint32_param"},
		{key: oip.LogFormat, update: grpcLogRequest(oip.LogFormat, &pb.LogSettingsRequest_SettingValue{
			ParameterChoice: &pb.LogSettingsRequest_SettingValue_Uint32Param{Uint32Param: 1}}), shown: "uint32_param 1", rule: `a string_param "default" or "ISO8601"`},
		{key: "oipkit_unknown_setting", update: grpcLogRequest("oipkit_unknown_setting", &pb.LogSettingsRequest_SettingValue{
			ParameterChoice: &pb.LogSettingsRequest_SettingValue_BoolParam{BoolParam: true}}), shown: "bool_param true", rule: "not a log setting", meant: unchanged},
		// log_file cannot be changed (OIP-EXT-LOG-004's rule, over gRPC).
		{key: oip.LogFile, update: grpcLogRequest(oip.LogFile, str("/var/log/oipkit-conformance.log")), shown: `string_param "/var/log/oipkit-conformance.log"`, rule: "log_file cannot be changed"},
	}
}

// ----- trace -----

// restTraceRoute is the server's trace settings over REST. Values are read
// as lists (restTrace: a string is a list of one).
var restTraceRoute = settingsRoute{
	errReq: "OIP-EXT-TRACE-005", stateReq: "OIP-EXT-TRACE-003", clientReq: "OIP-EXT-TRACE-007",
	keys:    traceKeys,
	get:     func(ctx context.Context) Evidencer { return Get(ctx, traceGlobal) },
	request: func(u any) Evidencer { return traceUpdate(traceGlobal, []byte(u.(string))) },
	values: func(c *Check) (map[string]string, bool) {
		s, ok := readTrace(c)
		return traceValues(s), ok
	},
	refused: restRefused,
	refusal: BeErrorResponse,
	form: func(key, value string) any {
		var list []string
		if json.Unmarshal([]byte(value), &list) == nil && len(list) == 1 && key != oip.TraceLevel {
			return fmt.Sprintf(`{%q: %q}`, key, list[0])
		}
		return fmt.Sprintf(`{%q: %s}`, key, value)
	},
}

func traceValues(s traceSettings) map[string]string {
	out := map[string]string{}
	for _, k := range traceKeys {
		out[k] = canonical(s[k])
	}
	return out
}

// restTraceSet is the REST update of one trace setting to value (JSON
// text); meant and other are lists, as the settings are read.
func restTraceSet(key, value, rule, meant, other string) spelling {
	return spelling{key: key, update: fmt.Sprintf(`{%q: %s}`, key, value), shown: value, rule: rule, meant: meant, other: other}
}

// traceLevelSpellings are trace_level in other spellings: a bare level and
// a lower-case one obviously mean that level; BOGUS means none.
func traceLevelSpellings() []spelling {
	const rule = "an array of OFF, TIMESTAMPS and TENSORS"
	return []spelling{
		restTraceSet(oip.TraceLevel, `"TIMESTAMPS"`, rule, `["TIMESTAMPS"]`, `["OFF"]`),
		restTraceSet(oip.TraceLevel, `["timestamps"]`, rule, `["TIMESTAMPS"]`, `["OFF"]`),
		restTraceSet(oip.TraceLevel, `["BOGUS"]`, rule, "", ""),
	}
}

// traceCountSpellings are trace_rate, trace_count and log_frequency as JSON
// numbers, "-1" and "abc".
func traceCountSpellings() []spelling {
	const rule = "a string of a count"
	var out []spelling
	for _, c := range []struct{ key, number, other string }{
		{oip.TraceRate, "1000", "999"},
		{oip.TraceCount, "100", "99"},
		{oip.TraceLogFrequency, "50", "49"},
	} {
		other := fmt.Sprintf(`[%q]`, c.other)
		minusOne := restTraceSet(c.key, `"-1"`, rule, `["-1"]`, other)
		// TR-TRACE: trace_count "-1" means no limit, a value the definition
		// allows; a negative rate or frequency is none: kept as sent, it is
		// lenient.
		minusOne.allowed = c.key == oip.TraceCount
		out = append(out,
			// A JSON number obviously means its decimal string.
			restTraceSet(c.key, c.number, rule, fmt.Sprintf(`[%q]`, c.number), other),
			minusOne,
			// A string, the definition's type, kept as sent: lenient.
			restTraceSet(c.key, `"abc"`, rule, `["abc"]`, other))
	}
	return out
}

// traceUnknownSpelling names a setting the extension does not define.
func traceUnknownSpelling() spelling {
	return restTraceSet("oipkit_unknown_setting", `"1"`, "not a trace setting", unchanged, "")
}

// grpcTraceRequest is a TraceSetting request on model ("" for the server)
// setting key to value.
func grpcTraceRequest(model, key string, value ...string) *pb.TraceSettingRequest {
	return &pb.TraceSettingRequest{ModelName: model, Settings: map[string]*pb.TraceSettingRequest_SettingValue{key: {Value: value}}}
}

var grpcTraceRoute = settingsRoute{
	errReq: "OIP-EXT-TRACE-006", stateReq: "OIP-EXT-TRACE-006", clientReq: "OIP-EXT-TRACE-007",
	keys: traceKeys,
	get: func(ctx context.Context) Evidencer {
		_, c := Invoke(ctx, "TraceSetting", &pb.TraceSettingRequest{}, Stub().TraceSetting)
		return c
	},
	request: func(u any) Evidencer { return UnsentCall("TraceSetting", u.(*pb.TraceSettingRequest)) },
	values: func(c *Check) (map[string]string, bool) {
		var out map[string]string
		ok := c.To(PassCheck(func(r *pb.TraceSettingResponse) error {
			s := traceSettings{}
			for k, v := range r.GetSettings() {
				s[k] = v.GetValue()
			}
			out = traceValues(s)
			return nil
		}))
		return out, ok
	},
	refused: grpcRefused,
	refusal: BeRejected,
	form: func(key, value string) any {
		var list []string
		_ = json.Unmarshal([]byte(value), &list) // values are the canonical lists read
		return grpcTraceRequest("", key, list...)
	},
}

// grpcTraceSpellings are TraceSetting requests with an unknown setting, an
// unknown level and an unknown model.
func grpcTraceSpellings() []spelling {
	return []spelling{
		{key: "oipkit_unknown_setting", update: grpcTraceRequest("", "oipkit_unknown_setting", "1"), shown: `["1"]`, rule: "not a trace setting", meant: unchanged},
		{key: oip.TraceLevel, update: grpcTraceRequest("", oip.TraceLevel, "BOGUS"), shown: `["BOGUS"]`, rule: "OFF, TIMESTAMPS or TENSORS"},
		// A model the server does not serve has no settings to change: only
		// a refusal (NOT_FOUND, INVALID_ARGUMENT) is right.
		{key: oip.TraceRate, update: grpcTraceRequest("does_not_exist", oip.TraceRate, "5"), shown: `["5"] for model does_not_exist`, rule: "settings of a model the server serves"},
	}
}
