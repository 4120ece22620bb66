package reference

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

// The trace extension (Triton's): trace settings of the server and of each
// model, read and changed over REST (GET/POST /v2/trace/setting and
// /v2/models/{m}/trace/setting) and gRPC (TraceSetting).
//
// A model follows the server's settings until its first update, which
// copies every server setting it does not name into the model's own; a
// model setting cleared (null over REST, no value over gRPC) follows the
// server's again. Server settings cannot be cleared. Updates are checked
// whole before any of it applies. trace_file is "" (no trace file) and
// cannot be changed over the network, as in recent Triton releases. The
// reference server keeps and reports the settings; it collects no traces.

var extTrace = extension{
	name:       specs.ExtTrace,
	advertised: true,
	rest: []extRoute{
		{method: http.MethodGet, path: "/v2/trace/setting", serve: (*Server).serveTrace},
		{method: http.MethodPost, path: "/v2/trace/setting", serve: (*Server).serveTrace},
		{method: http.MethodGet, path: "/v2/models/{m}/trace/setting", serve: (*Server).serveTrace},
		{method: http.MethodPost, path: "/v2/models/{m}/trace/setting", serve: (*Server).serveTrace},
	},
	grpc: []string{"TraceSetting"},
}

// traceSettings are the server's settings and the models' own.
type traceSettings struct {
	mu     sync.Mutex
	global oip.TraceSettings
	// models holds the settings of models that were updated; a missing key
	// follows the server's. Only models the repository resolved get an
	// entry, so clients cannot grow it with made-up names.
	models map[string]oip.TraceSettings
}

func newTraceSettings() *traceSettings {
	return &traceSettings{
		global: oip.TraceSettings{
			oip.TraceFile:         {""},
			oip.TraceLevel:        {oip.TraceLevelOff},
			oip.TraceRate:         {"1000"},
			oip.TraceCount:        {"-1"},
			oip.TraceLogFrequency: {"0"},
		},
		models: map[string]oip.TraceSettings{},
	}
}

// settingsOf returns the settings of model ("" for the server's). The
// caller holds mu.
func (t *traceSettings) settingsOf(model string) oip.TraceSettings {
	out := maps.Clone(t.global)
	if own, ok := t.models[model]; ok && model != "" {
		maps.Copy(out, own)
	}
	return out
}

func (t *traceSettings) get(model string) oip.TraceSettings {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.settingsOf(model)
}

// update checks u and applies it to model ("" for the server), returning
// the settings after it.
func (t *traceSettings) update(model string, u oip.TraceSettings) (oip.TraceSettings, error) {
	for k, v := range u {
		if err := checkTraceSetting(k, v, model != ""); err != nil {
			return nil, err
		}
	}
	if levels, ok := u[oip.TraceLevel]; ok {
		// Levels are a set: a level named twice is kept once.
		u[oip.TraceLevel] = uniqueLevels(levels)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if model == "" {
		for k, v := range u {
			t.global[k] = slices.Clone(v)
		}
		return t.settingsOf(""), nil
	}
	own, ok := t.models[model]
	if !ok {
		own = maps.Clone(t.global)
		delete(own, oip.TraceFile) // not a model setting
		t.models[model] = own
	}
	for k, v := range u {
		if len(v) == 0 {
			delete(own, k)
		} else {
			own[k] = slices.Clone(v)
		}
	}
	return t.settingsOf(model), nil
}

// checkTraceSetting checks one setting of an update; an empty value clears
// a model's setting.
func checkTraceSetting(name string, v []string, model bool) error {
	switch name {
	case oip.TraceLevel, oip.TraceRate, oip.TraceCount, oip.TraceLogFrequency:
	case oip.TraceFile:
		return invalidf("trace settings: %s cannot be changed over the network", oip.TraceFile)
	default:
		return invalidf("trace settings: unknown setting %q; the settings are %s, %s, %s and %s", clipText(name),
			oip.TraceLevel, oip.TraceRate, oip.TraceCount, oip.TraceLogFrequency)
	}
	if len(v) == 0 {
		if !model {
			return invalidf("trace settings: %s of the server cannot be cleared, only a model's", name)
		}
		return nil
	}
	if name == oip.TraceLevel {
		for _, l := range v {
			switch l {
			case oip.TraceLevelTimestamps, oip.TraceLevelTensors:
			case oip.TraceLevelOff:
				if len(v) > 1 {
					return invalidf("trace settings: %s OFF cannot be combined with other levels", oip.TraceLevel)
				}
			default:
				return invalidf("trace settings: %s %q is not one of OFF, TIMESTAMPS and TENSORS", oip.TraceLevel, clipText(l))
			}
		}
		return nil
	}
	if len(v) != 1 {
		return invalidf("trace settings: %s has %d values; want one", name, len(v))
	}
	n, err := strconv.ParseInt(v[0], 10, 32)
	low := int64(0)
	if name == oip.TraceCount {
		low = -1 // -1: no limit
	}
	if err != nil || n < low {
		return invalidf("trace settings: %s is %q; want an integer of at least %d, as a string", name, clipText(v[0]), low)
	}
	return nil
}

// traceModel resolves the model of a per-model request ("" for none).
func (s *Server) traceModel(name string) error {
	if name == "" {
		return nil
	}
	_, _, err := s.repo.Lookup(name, "")
	return err
}

// serveTrace answers GET and POST on the trace setting routes.
func (s *Server) serveTrace(w *statusWriter, r *http.Request, p routeParams) {
	if err := s.traceModel(p.model); err != nil {
		writeError(w, httpStatus(err), err.Error())
		return
	}
	if r.Method != http.MethodPost {
		writeJSON(w, http.StatusOK, s.trace.get(p.model))
		return
	}
	var members map[string]json.RawMessage
	err := s.readJSONBody(w, r, &members)
	u := oip.TraceSettings{}
	for k, raw := range members {
		if err != nil {
			break
		}
		var one string
		switch {
		case string(raw) == "null":
			u[k] = nil
		case k == oip.TraceLevel && json.Unmarshal(raw, &one) == nil:
			err = invalidf("trace settings: %s is %s; want an array of levels", k, clipText(string(raw)))
		case json.Unmarshal(raw, &one) == nil:
			u[k] = []string{one}
		case k == oip.TraceLevel:
			var list []string
			if json.Unmarshal(raw, &list) != nil || list == nil {
				err = invalidf("trace settings: %s is %s; want an array of strings", k, clipText(string(raw)))
			} else if len(list) == 0 {
				err = invalidf("trace settings: %s is []; want at least one level (null clears a model's setting)", k)
			}
			u[k] = list
		default:
			err = invalidf("trace settings: %s is %s; want a string", clipText(k), clipText(string(raw)))
		}
	}
	var now oip.TraceSettings
	if err == nil {
		now, err = s.trace.update(p.model, u)
	}
	if err != nil {
		writeError(w, httpStatus(err), err.Error())
		return
	}
	writeJSON(w, http.StatusOK, now)
}

func (g *grpcService) TraceSetting(_ context.Context, req *inferencepb.TraceSettingRequest) (*inferencepb.TraceSettingResponse, error) {
	if err := g.s.traceModel(req.GetModelName()); err != nil {
		return nil, toStatus(err)
	}
	u := oip.TraceSettings{}
	for k, v := range req.GetSettings() {
		u[k] = v.GetValue()
	}
	now, err := g.s.trace.update(req.GetModelName(), u)
	if err != nil {
		return nil, toStatus(err)
	}
	return oip.TraceSettingsToProto(now), nil
}

// uniqueLevels drops repeated levels, keeping the first of each.
func uniqueLevels(v []string) []string {
	var out []string
	for _, l := range v {
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}
