package oip

import (
	"fmt"

	"github.com/oipkit/oipkit/specs/inferencepb"
)

// Messages of the logging extension (Triton's "logging"): the settings of
// GET/POST /v2/logging and of the gRPC LogSettings call.

// Names of the log settings.
const (
	LogFile         = "log_file"
	LogInfo         = "log_info"
	LogWarning      = "log_warning"
	LogError        = "log_error"
	LogVerboseLevel = "log_verbose_level"
	LogFormat       = "log_format"
)

// Values of log_format.
const (
	LogFormatDefault = "default"
	LogFormatISO8601 = "ISO8601"
)

// LogSettings are all the log settings, as a server reports them.
type LogSettings struct {
	File         string `json:"log_file"`
	Info         bool   `json:"log_info"`
	Warning      bool   `json:"log_warning"`
	Error        bool   `json:"log_error"`
	VerboseLevel uint32 `json:"log_verbose_level"`
	Format       string `json:"log_format"`
}

// LogSettingsUpdate is the settings a client changes; a nil field is left
// as it is.
type LogSettingsUpdate struct {
	Info         *bool   `json:"log_info,omitempty"`
	Warning      *bool   `json:"log_warning,omitempty"`
	Error        *bool   `json:"log_error,omitempty"`
	VerboseLevel *uint32 `json:"log_verbose_level,omitempty"`
	Format       *string `json:"log_format,omitempty"`
}

// LogSettingsToProto is the gRPC form of every setting.
func LogSettingsToProto(s LogSettings) *inferencepb.LogSettingsResponse {
	type sv = inferencepb.LogSettingsResponse_SettingValue
	b := func(v bool) *sv {
		return &sv{ParameterChoice: &inferencepb.LogSettingsResponse_SettingValue_BoolParam{BoolParam: v}}
	}
	str := func(v string) *sv {
		return &sv{ParameterChoice: &inferencepb.LogSettingsResponse_SettingValue_StringParam{StringParam: v}}
	}
	return &inferencepb.LogSettingsResponse{Settings: map[string]*sv{
		LogFile:         str(s.File),
		LogInfo:         b(s.Info),
		LogWarning:      b(s.Warning),
		LogError:        b(s.Error),
		LogVerboseLevel: {ParameterChoice: &inferencepb.LogSettingsResponse_SettingValue_Uint32Param{Uint32Param: s.VerboseLevel}},
		LogFormat:       str(s.Format),
	}}
}

// LogSettingsFromProto reads a LogSettings answer; a missing setting or one
// of the wrong type is an error.
func LogSettingsFromProto(r *inferencepb.LogSettingsResponse) (LogSettings, error) {
	var s LogSettings
	m := r.GetSettings()
	get := func(name string) (*inferencepb.LogSettingsResponse_SettingValue, error) {
		v, ok := m[name]
		if !ok {
			return nil, fmt.Errorf("log settings: %q is missing", name)
		}
		return v, nil
	}
	for _, name := range []string{LogFile, LogFormat} {
		v, err := get(name)
		if err != nil {
			return s, err
		}
		c, ok := v.GetParameterChoice().(*inferencepb.LogSettingsResponse_SettingValue_StringParam)
		if !ok {
			return s, fmt.Errorf("log settings: %q is %v, want a string_param", name, v)
		}
		if name == LogFile {
			s.File = c.StringParam
		} else {
			s.Format = c.StringParam
		}
	}
	for name, into := range map[string]*bool{LogInfo: &s.Info, LogWarning: &s.Warning, LogError: &s.Error} {
		v, err := get(name)
		if err != nil {
			return s, err
		}
		c, ok := v.GetParameterChoice().(*inferencepb.LogSettingsResponse_SettingValue_BoolParam)
		if !ok {
			return s, fmt.Errorf("log settings: %q is %v, want a bool_param", name, v)
		}
		*into = c.BoolParam
	}
	v, err := get(LogVerboseLevel)
	if err != nil {
		return s, err
	}
	c, ok := v.GetParameterChoice().(*inferencepb.LogSettingsResponse_SettingValue_Uint32Param)
	if !ok {
		return s, fmt.Errorf("log settings: %q is %v, want a uint32_param", LogVerboseLevel, v)
	}
	s.VerboseLevel = c.Uint32Param
	return s, nil
}

// LogUpdateToProto is the gRPC request of an update.
func LogUpdateToProto(u LogSettingsUpdate) *inferencepb.LogSettingsRequest {
	type sv = inferencepb.LogSettingsRequest_SettingValue
	req := &inferencepb.LogSettingsRequest{Settings: map[string]*sv{}}
	for name, b := range map[string]*bool{LogInfo: u.Info, LogWarning: u.Warning, LogError: u.Error} {
		if b != nil {
			req.Settings[name] = &sv{ParameterChoice: &inferencepb.LogSettingsRequest_SettingValue_BoolParam{BoolParam: *b}}
		}
	}
	if u.VerboseLevel != nil {
		req.Settings[LogVerboseLevel] = &sv{ParameterChoice: &inferencepb.LogSettingsRequest_SettingValue_Uint32Param{Uint32Param: *u.VerboseLevel}}
	}
	if u.Format != nil {
		req.Settings[LogFormat] = &sv{ParameterChoice: &inferencepb.LogSettingsRequest_SettingValue_StringParam{StringParam: *u.Format}}
	}
	return req
}
