package reference_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

// syncBuffer is a log destination safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The settings are read and changed over REST and gRPC, updates are checked
// whole, and they gate the server's log.
func TestLogSettings(t *testing.T) {
	var logged syncBuffer
	srv := startWith(t, nil, func(c *reference.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	base := "http://" + srv.HTTPAddr()
	var s oip.LogSettings
	wantJSON(t, get(t, base+"/v2/logging"), http.StatusOK, &s)
	if s != (oip.LogSettings{Info: true, Warning: true, Error: true, Format: "default"}) {
		t.Fatalf("initial settings %+v", s)
	}
	wantJSON(t, post(t, base+"/v2/logging", `{"log_verbose_level": 2, "log_info": false}`), http.StatusOK, &s)
	if s.VerboseLevel != 2 || s.Info || !s.Warning || s.Format != "default" {
		t.Fatalf("after update: %+v", s)
	}
	for _, bad := range []string{`{"log_file": "/tmp/x"}`, `{"log_verbose_level": -1}`, `{"log_verbose_level": 1.5}`, `{"log_verbose_level": "1"}`, `{"log_verbose_level": true}`,
		`{"log_verbose_level": 4294967296}`, `{"log_info": "yes"}`, `{"log_info": null}`, `{"log_format": "xml"}`,
		`{"log_format": 1}`, `{"log_level": 1}`, `{"log_info": true, "bogus": 1}`, `[1]`, `{"log_info": tru`} {
		wantError(t, post(t, base+"/v2/logging", bad), http.StatusBadRequest)
	}
	wantJSON(t, get(t, base+"/v2/logging"), http.StatusOK, &s)
	if s.VerboseLevel != 2 || s.Info {
		t.Fatalf("a refused update changed the settings: %+v", s)
	}

	c := dial(t, srv.GRPCAddr())
	type sv = inferencepb.LogSettingsRequest_SettingValue
	resp, err := c.LogSettings(ctxT(t), &inferencepb.LogSettingsRequest{Settings: map[string]*sv{
		"log_info":  {ParameterChoice: &inferencepb.LogSettingsRequest_SettingValue_BoolParam{BoolParam: true}},
		"log_error": {ParameterChoice: &inferencepb.LogSettingsRequest_SettingValue_BoolParam{BoolParam: false}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := oip.LogSettingsFromProto(resp)
	if err != nil || !got.Info || got.Error || got.VerboseLevel != 2 {
		t.Fatalf("gRPC settings %+v, %v", got, err)
	}
	for name, v := range map[string]*sv{
		"log_info":          {ParameterChoice: &inferencepb.LogSettingsRequest_SettingValue_Uint32Param{Uint32Param: 1}},
		"log_verbose_level": {ParameterChoice: &inferencepb.LogSettingsRequest_SettingValue_BoolParam{BoolParam: true}},
		"log_format":        {ParameterChoice: &inferencepb.LogSettingsRequest_SettingValue_StringParam{StringParam: "xml"}},
		"log_file":          {ParameterChoice: &inferencepb.LogSettingsRequest_SettingValue_StringParam{StringParam: "/tmp/x"}},
		"nope":              {ParameterChoice: &inferencepb.LogSettingsRequest_SettingValue_BoolParam{BoolParam: true}},
		"log_warning":       {},
	} {
		_, err := c.LogSettings(ctxT(t), &inferencepb.LogSettingsRequest{Settings: map[string]*sv{name: v}})
		wantCode(t, err, codes.InvalidArgument)
	}

	// log_verbose_level lets the debug record of a rejected request through
	// a handler set to info; at 0 it is dropped.
	bad := `{"inputs":[]}`
	for _, level := range []int{0, 1} {
		wantJSON(t, post(t, base+"/v2/logging", fmt.Sprintf(`{"log_verbose_level": %d}`, level)), http.StatusOK, &s)
		before := strings.Count(logged.String(), "REST inference rejected")
		wantError(t, post(t, base+"/v2/models/add_sub/infer", bad), http.StatusBadRequest)
		if n := strings.Count(logged.String(), "REST inference rejected") - before; n != level {
			t.Errorf("log_verbose_level %d: %d debug records of the rejected request, want %d\n%s", level, n, level, logged.String())
		}
	}
}
