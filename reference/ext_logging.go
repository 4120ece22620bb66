package reference

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"sync"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

// The logging extension (Triton's): the server's log settings, read and
// changed over REST (GET/POST /v2/logging) and gRPC (LogSettings).
//
// The settings gate the server's own log (Server.log): log_error,
// log_warning and log_info let records of those levels through, and a
// log_verbose_level above 0 lets debug records through. log_format is
// checked and reported; the records' layout is the configured slog
// handler's (whose times are RFC 3339, an ISO 8601 profile, either way).
// log_file is the empty string (the handler's own destination) and cannot be
// changed over the network, as in Triton. An update is checked whole before
// any of it applies: an unknown setting or a value of the wrong type
// changes nothing.

var extLogging = extension{
	name:       specs.ExtLogging,
	advertised: true,
	rest: []extRoute{
		{method: http.MethodGet, path: "/v2/logging", serve: (*Server).serveLogging},
		{method: http.MethodPost, path: "/v2/logging", serve: (*Server).serveLogging},
	},
	grpc: []string{"LogSettings"},
}

// logSettings are the current settings, shared by every handler.
type logSettings struct {
	mu sync.RWMutex
	s  oip.LogSettings
}

func newLogSettings() *logSettings {
	return &logSettings{s: oip.LogSettings{Info: true, Warning: true, Error: true, Format: oip.LogFormatDefault}}
}

func (l *logSettings) get() oip.LogSettings {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.s
}

// update checks u and applies it; it returns the settings after it.
func (l *logSettings) update(u oip.LogSettingsUpdate) (oip.LogSettings, error) {
	if u.Format != nil && *u.Format != oip.LogFormatDefault && *u.Format != oip.LogFormatISO8601 {
		return oip.LogSettings{}, invalidf("%s %q is not supported; want %q or %q", oip.LogFormat, clipText(*u.Format), oip.LogFormatDefault, oip.LogFormatISO8601)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	set := func(into *bool, v *bool) {
		if v != nil {
			*into = *v
		}
	}
	set(&l.s.Info, u.Info)
	set(&l.s.Warning, u.Warning)
	set(&l.s.Error, u.Error)
	if u.VerboseLevel != nil {
		l.s.VerboseLevel = *u.VerboseLevel
	}
	if u.Format != nil {
		l.s.Format = *u.Format
	}
	return l.s, nil
}

// enabled reports whether a record of level passes the settings.
func (l *logSettings) enabled(level slog.Level) bool {
	s := l.get()
	switch {
	case level >= slog.LevelError:
		return s.Error
	case level >= slog.LevelWarn:
		return s.Warning
	case level >= slog.LevelInfo:
		return s.Info
	}
	return s.VerboseLevel > 0
}

// logGate is a slog handler that drops what the log settings turn off.
type logGate struct {
	slog.Handler
	settings *logSettings
}

func (g logGate) Enabled(ctx context.Context, level slog.Level) bool {
	return g.settings.enabled(level) && (level < slog.LevelInfo || g.Handler.Enabled(ctx, level))
}

func (g logGate) Handle(ctx context.Context, r slog.Record) error {
	if !g.settings.enabled(r.Level) {
		return nil
	}
	return g.Handler.Handle(ctx, r)
}

func (g logGate) WithAttrs(as []slog.Attr) slog.Handler {
	return logGate{Handler: g.Handler.WithAttrs(as), settings: g.settings}
}

func (g logGate) WithGroup(name string) slog.Handler {
	return logGate{Handler: g.Handler.WithGroup(name), settings: g.settings}
}

// restLogUpdate reads a REST update: an object of known settings with
// values of their types.
func restLogUpdate(members map[string]json.RawMessage) (oip.LogSettingsUpdate, error) {
	var u oip.LogSettingsUpdate
	for k, raw := range members {
		var err error
		switch k {
		case oip.LogInfo:
			u.Info, err = jsonBool(k, raw)
		case oip.LogWarning:
			u.Warning, err = jsonBool(k, raw)
		case oip.LogError:
			u.Error, err = jsonBool(k, raw)
		case oip.LogVerboseLevel:
			// Decoded as any: a json.Number would also take the string "1".
			var read any
			d := json.NewDecoder(bytes.NewReader(raw))
			d.UseNumber()
			if d.Decode(&read) != nil {
				return u, invalidf("%s is %s; want an integer of at least 0", k, clipText(string(raw)))
			}
			n, isNumber := read.(json.Number)
			if !isNumber {
				return u, invalidf("%s is %s; want an integer of at least 0", k, clipText(string(raw)))
			}
			v, perr := n.Int64()
			if perr != nil || v < 0 || v > math.MaxUint32 {
				return u, invalidf("%s is %s; want an integer from 0 to %d", k, clipText(string(raw)), uint32(math.MaxUint32))
			}
			level := uint32(v)
			u.VerboseLevel = &level
		case oip.LogFormat:
			var s string
			if json.Unmarshal(raw, &s) != nil {
				return u, invalidf("%s is %s; want a string", k, clipText(string(raw)))
			}
			u.Format = &s
		default:
			err = unknownLogSetting(k)
		}
		if err != nil {
			return u, err
		}
	}
	return u, nil
}

func unknownLogSetting(name string) error {
	if name == oip.LogFile {
		return invalidf("%s cannot be changed over the network", oip.LogFile)
	}
	return invalidf("unknown log setting %q; the settings are %s, %s, %s, %s and %s", clipText(name),
		oip.LogInfo, oip.LogWarning, oip.LogError, oip.LogVerboseLevel, oip.LogFormat)
}

func jsonBool(name string, raw json.RawMessage) (*bool, error) {
	var b bool
	if string(raw) == "null" || json.Unmarshal(raw, &b) != nil {
		return nil, invalidf("%s is %s; want true or false", name, clipText(string(raw)))
	}
	return &b, nil
}

// clipText shortens a client's text for an error message.
func clipText(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// serveLogging answers GET and POST /v2/logging.
func (s *Server) serveLogging(w *statusWriter, r *http.Request, _ routeParams) {
	if r.Method != http.MethodPost {
		writeJSON(w, http.StatusOK, s.logSettings.get())
		return
	}
	var members map[string]json.RawMessage
	err := s.readJSONBody(w, r, &members)
	var u oip.LogSettingsUpdate
	if err == nil {
		u, err = restLogUpdate(members)
	}
	var now oip.LogSettings
	if err == nil {
		now, err = s.logSettings.update(u)
	}
	if err != nil {
		writeError(w, httpStatus(err), fmt.Sprintf("log settings: %v", err))
		return
	}
	writeJSON(w, http.StatusOK, now)
}

func (g *grpcService) LogSettings(_ context.Context, req *inferencepb.LogSettingsRequest) (*inferencepb.LogSettingsResponse, error) {
	var u oip.LogSettingsUpdate
	for k, v := range req.GetSettings() {
		switch c := v.GetParameterChoice().(type) {
		case *inferencepb.LogSettingsRequest_SettingValue_BoolParam:
			b := c.BoolParam
			switch k {
			case oip.LogInfo:
				u.Info = &b
			case oip.LogWarning:
				u.Warning = &b
			case oip.LogError:
				u.Error = &b
			default:
				return nil, toStatus(logTypeError(k, "bool_param"))
			}
		case *inferencepb.LogSettingsRequest_SettingValue_Uint32Param:
			if k != oip.LogVerboseLevel {
				return nil, toStatus(logTypeError(k, "uint32_param"))
			}
			n := c.Uint32Param
			u.VerboseLevel = &n
		case *inferencepb.LogSettingsRequest_SettingValue_StringParam:
			if k != oip.LogFormat {
				return nil, toStatus(logTypeError(k, "string_param"))
			}
			f := c.StringParam
			u.Format = &f
		default:
			return nil, toStatus(invalidf("log settings: %q has no value", clipText(k)))
		}
	}
	now, err := g.s.logSettings.update(u)
	if err != nil {
		return nil, toStatus(invalidf("log settings: %v", err))
	}
	return oip.LogSettingsToProto(now), nil
}

// logTypeError refuses setting name given as a value of kind.
func logTypeError(name, kind string) error {
	switch name {
	case oip.LogInfo, oip.LogWarning, oip.LogError:
		return invalidf("log settings: %s is a %s; want a bool_param", name, kind)
	case oip.LogVerboseLevel:
		return invalidf("log settings: %s is a %s; want a uint32_param", name, kind)
	case oip.LogFormat:
		return invalidf("log settings: %s is a %s; want a string_param", name, kind)
	}
	return fmt.Errorf("log settings: %w", unknownLogSetting(name))
}
