package oip

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/oipkit/oipkit/specs/inferencepb"
)

// Messages of the trace extension (Triton's "trace"): the settings of
// GET/POST /v2/trace/setting and /v2/models/{m}/trace/setting, and of the
// gRPC TraceSetting call. Every value is a list of strings: trace_level
// holds levels, the others one value each. Over REST trace_level is a JSON
// array and the others a JSON string.

// Names of the trace settings.
const (
	TraceFile         = "trace_file"
	TraceLevel        = "trace_level"
	TraceRate         = "trace_rate"
	TraceCount        = "trace_count"
	TraceLogFrequency = "log_frequency"
)

// Values of trace_level.
const (
	TraceLevelOff        = "OFF"
	TraceLevelTimestamps = "TIMESTAMPS"
	TraceLevelTensors    = "TENSORS"
)

// TraceSettings are trace settings by name.
type TraceSettings map[string][]string

// MarshalJSON writes trace_level as an array, every other setting as a
// string (its one value), and an empty value as null.
func (s TraceSettings) MarshalJSON() ([]byte, error) {
	out := make(map[string]any, len(s))
	for k, v := range s {
		switch {
		case k == TraceLevel && v != nil:
			out[k] = v
		case len(v) == 0:
			out[k] = nil
		default:
			out[k] = v[0]
		}
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads strings, arrays of strings and null (an empty value).
func (s *TraceSettings) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*s = make(TraceSettings, len(raw))
	for k, r := range raw {
		var one string
		var list []string
		switch {
		case string(r) == "null":
			(*s)[k] = nil
		case json.Unmarshal(r, &one) == nil:
			(*s)[k] = []string{one}
		default:
			if err := json.Unmarshal(r, &list); err != nil {
				return err
			}
			(*s)[k] = list
		}
	}
	return nil
}

// TraceSettingsToProto is the gRPC answer of settings s.
func TraceSettingsToProto(s TraceSettings) *inferencepb.TraceSettingResponse {
	r := &inferencepb.TraceSettingResponse{Settings: map[string]*inferencepb.TraceSettingResponse_SettingValue{}}
	for k, v := range s {
		r.Settings[k] = &inferencepb.TraceSettingResponse_SettingValue{Value: slices.Clone(v)}
	}
	return r
}

// TraceSettingsFromProto reads a gRPC answer.
func TraceSettingsFromProto(r *inferencepb.TraceSettingResponse) TraceSettings {
	s := make(TraceSettings, len(r.GetSettings()))
	for k, v := range r.GetSettings() {
		s[k] = slices.Clone(v.GetValue())
	}
	return s
}

// TraceUpdateToProto is the gRPC request changing settings u (an empty
// value clears a model's setting) of model, or of the server when model is
// empty.
func TraceUpdateToProto(model string, u TraceSettings) *inferencepb.TraceSettingRequest {
	r := &inferencepb.TraceSettingRequest{ModelName: model, Settings: map[string]*inferencepb.TraceSettingRequest_SettingValue{}}
	for _, k := range slices.Sorted(maps.Keys(u)) {
		r.Settings[k] = &inferencepb.TraceSettingRequest_SettingValue{Value: slices.Clone(u[k])}
	}
	return r
}
