package selftest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// Servers that take a logging or trace setting in a spelling its
// definition does not allow in one wrong way each: as meant (lenient),
// stored in the wrong type, ignored while answering 200, or refused as a
// server fault (conformance/suite/ext_settings.go).

func init() { breakages = append(breakages, settingsBreakages...) }

// rewriteSetting rewrites the body of a POST to path (matched by on) that
// contains from into to, as a server that reads the one as the other.
func rewriteSetting(on func(*http.Request) bool, from, to string) func(r *http.Request) {
	return func(r *http.Request) {
		if !on(r) || r.Method != http.MethodPost {
			return
		}
		b, _ := io.ReadAll(r.Body)
		b = bytes.ReplaceAll(b, []byte(from), []byte(to))
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	}
}

// storesStringInfo is a server that keeps log_info "true" as the string it
// was sent: it applies true, and reports log_info as "true" until the next
// update of log_info.
func storesStringInfo() *restHook {
	var stringy atomic.Bool
	return &restHook{
		in: func(r *http.Request) {
			if !isLogging(r) || r.Method != http.MethodPost {
				return
			}
			b := requestBody(r)
			switch {
			case bytes.Equal(b, []byte(`{"log_info": "true"}`)):
				stringy.Store(true)
				b = []byte(`{"log_info": true}`)
			case bytes.Contains(b, []byte(`"log_info"`)):
				stringy.Store(false)
			}
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
		},
		out: func(r *http.Request, a *answer) {
			if isLogging(r) && a.status == 200 && stringy.Load() {
				editJSON(a, func(m map[string]any) { m["log_info"] = "true" })
			}
		},
	}
}

// onLogSettings returns an interceptor that passes a LogSettings request
// through edit, which may answer it itself.
func onLogSettings(edit func(*pb.LogSettingsRequest) (*pb.LogSettingsRequest, error)) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if r, ok := req.(*pb.LogSettingsRequest); ok {
			var err error
			if req, err = edit(r); err != nil {
				return nil, err
			}
		}
		return h(ctx, req)
	}
}

// stringInfo reports whether r sets log_info with a string_param.
func stringInfo(r *pb.LogSettingsRequest) bool {
	_, ok := r.GetSettings()["log_info"].GetParameterChoice().(*pb.LogSettingsRequest_SettingValue_StringParam)
	return ok
}

var settingsBreakages = []breakage{
	{
		name:    "rest-log-format-case-accepted",
		rest:    &restHook{in: rewriteSetting(isLogging, `"iso8601"`, `"ISO8601"`)},
		lenient: []string{"OIP-EXT-LOG-008"},
	},
	{
		// The answer to the update carries the string: the schema grades
		// it under OIP-EXT-LOG-003, and the spec reads nothing after a body
		// it refuses (one defect, one failure).
		name:   "rest-log-stores-string-bool",
		rest:   storesStringInfo(),
		failed: []string{"OIP-EXT-LOG-003"},
	},
	{
		name:   "rest-log-ignores-format-case",
		rest:   &restHook{in: dropLogUpdate(`"Default"`)},
		failed: []string{"OIP-EXT-LOG-003"},
	},
	{
		name:   "rest-log-level-wraps-at-uint32",
		rest:   &restHook{in: rewriteSetting(isLogging, `4294967296`, `0`)},
		failed: []string{"OIP-EXT-LOG-003"},
	},
	{
		name:   "rest-log-500-for-number-bool",
		rest:   fault500(func(r *http.Request, b string) bool { return post(r, "/v2/logging", b, `{"log_warning": 1}`) }),
		failed: []string{"OIP-EXT-LOG-006"},
	},
	{
		name: "grpc-log-string-bool-accepted",
		grpc: onLogSettings(func(r *pb.LogSettingsRequest) (*pb.LogSettingsRequest, error) {
			if stringInfo(r) {
				v := r.GetSettings()["log_info"].GetStringParam() == "true"
				return &pb.LogSettingsRequest{Settings: map[string]*pb.LogSettingsRequest_SettingValue{
					"log_info": {ParameterChoice: &pb.LogSettingsRequest_SettingValue_BoolParam{BoolParam: v}}}}, nil
			}
			return r, nil
		}),
		lenient: []string{"OIP-EXT-LOG-008"},
	},
	{
		name: "grpc-log-internal-for-wrong-oneof",
		grpc: onLogSettings(func(r *pb.LogSettingsRequest) (*pb.LogSettingsRequest, error) {
			if stringInfo(r) {
				return nil, status.Error(codes.Internal, "bad variant access")
			}
			return r, nil
		}),
		failed: []string{"OIP-EXT-LOG-007"},
	},
	{
		name:    "rest-trace-bare-level-accepted",
		rest:    &restHook{in: rewriteSetting(isTraceSetting, `{"trace_level": "TIMESTAMPS"}`, `{"trace_level": ["TIMESTAMPS"]}`)},
		lenient: []string{"OIP-EXT-TRACE-007"},
	},
	negativeFrequencyWraps,
	{
		name:   "rest-trace-number-rate-ignored",
		rest:   &restHook{in: dropTraceUpdate(`{"trace_rate": 1000}`, false)},
		failed: []string{"OIP-EXT-TRACE-003"},
	},
	{
		name: "rest-trace-500-for-lower-case-level",
		rest: fault500(func(r *http.Request, b string) bool {
			return post(r, "/v2/trace/setting", b, `{"trace_level": ["timestamps"]}`)
		}),
		failed: []string{"OIP-EXT-TRACE-005"},
	},
	{
		name: "grpc-trace-unknown-model-internal",
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if r, ok := req.(*pb.TraceSettingRequest); ok && r.GetModelName() == "does_not_exist" {
				return nil, status.Error(codes.Internal, "model lookup failed")
			}
			return h(ctx, req)
		},
		failed: []string{"OIP-EXT-TRACE-006"},
	},
	{
		name: "grpc-trace-bogus-level-ignored",
		grpc: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if r, ok := req.(*pb.TraceSettingRequest); ok {
				if v := r.GetSettings()["trace_level"].GetValue(); len(v) == 1 && v[0] == "BOGUS" {
					req = &pb.TraceSettingRequest{}
				}
			}
			return h(ctx, req)
		},
		failed: []string{"OIP-EXT-TRACE-006"},
	},
}

// A server that exits after a misspelt setting is named with that request
// and fails the spec's primary requirement only, over REST and gRPC.
func TestServerKilledBySettingSpelling(t *testing.T) {
	t.Run("rest-log-level-1.5", func(t *testing.T) {
		testKilled(t, func(r *http.Request, body []byte) bool {
			return isLogging(r) && string(body) == `{"log_verbose_level": 1.5}`
		}, nil, "OIP-EXT-LOG-006", `POST /v2/logging with body {"log_verbose_level": 1.5}`)
	})
	t.Run("grpc-log-format-uint32", func(t *testing.T) {
		testKilled(t, nil, func(req any) bool {
			r, ok := req.(*pb.LogSettingsRequest)
			_, wrong := r.GetSettings()["log_format"].GetParameterChoice().(*pb.LogSettingsRequest_SettingValue_Uint32Param)
			return ok && wrong
		}, "OIP-EXT-LOG-007", `RPC LogSettings with body {"settings":{"log_format":{"uint32Param":1}}}`)
	})
}

// negativeFrequencyWraps keeps log_frequency "-1" as the largest
// frequency it holds, as a server that parses it unsigned and clamps it.
var negativeFrequencyWraps = breakage{
	name:   "rest-trace-negative-frequency-wraps",
	rest:   &restHook{in: rewriteSetting(isTraceSetting, `{"log_frequency": "-1"}`, `{"log_frequency": "2147483647"}`)},
	failed: []string{"OIP-EXT-TRACE-003"},
}
