package reference_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference/referencetest"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

// Server and model settings over REST and gRPC: a model copies the server's
// settings at its first update, a cleared model setting follows the
// server's again, bad updates change nothing.
func TestTraceSettings(t *testing.T) {
	srv := referencetest.Start(t)
	base := srv.HTTPURL()
	var s oip.TraceSettings
	wantJSON(t, get(t, base+"/v2/trace/setting"), http.StatusOK, &s)
	if !slices.Equal(s[oip.TraceLevel], []string{"OFF"}) || !slices.Equal(s[oip.TraceRate], []string{"1000"}) || len(s) != 5 {
		t.Fatalf("initial settings %v", s)
	}
	wantJSON(t, post(t, base+"/v2/trace/setting", `{"trace_rate": "7", "trace_level": ["TIMESTAMPS", "TENSORS"]}`), http.StatusOK, &s)
	if !slices.Equal(s[oip.TraceRate], []string{"7"}) || !slices.Equal(s[oip.TraceCount], []string{"-1"}) || len(s[oip.TraceLevel]) != 2 {
		t.Fatalf("after update %v", s)
	}
	model := base + "/v2/models/add_sub/trace/setting"
	wantJSON(t, post(t, model, `{"trace_count": "5"}`), http.StatusOK, &s)
	if !slices.Equal(s[oip.TraceCount], []string{"5"}) || !slices.Equal(s[oip.TraceRate], []string{"7"}) {
		t.Fatalf("model after first update %v", s)
	}
	// The model copied trace_rate 7: a later server change does not reach it.
	wantJSON(t, post(t, base+"/v2/trace/setting", `{"trace_rate": "9"}`), http.StatusOK, &s)
	wantJSON(t, get(t, model), http.StatusOK, &s)
	if !slices.Equal(s[oip.TraceRate], []string{"7"}) {
		t.Fatalf("model trace_rate %v, want its own 7", s[oip.TraceRate])
	}
	wantJSON(t, post(t, model, `{"trace_rate": null}`), http.StatusOK, &s)
	if !slices.Equal(s[oip.TraceRate], []string{"9"}) || !slices.Equal(s[oip.TraceCount], []string{"5"}) {
		t.Fatalf("model after clearing trace_rate %v", s)
	}
	for _, bad := range []string{`{"trace_level": ["BOGUS"]}`, `{"trace_level": ["OFF", "TENSORS"]}`, `{"trace_level": []}`, `{"trace_level": "TIMESTAMPS"}`, `{"trace_level": ["timestamps"]}`, `{"log_frequency": "-1"}`,
		`{"trace_rate": 5}`, `{"trace_rate": "-2"}`, `{"trace_count": "-2"}`, `{"trace_rate": "x"}`, `{"trace_file": "/tmp/t"}`,
		`{"trace_rate": ["1", "2"]}`, `{"nope": "1"}`, `[]`, `{"trace_rate": "99999999999"}`} {
		wantError(t, post(t, model, bad), http.StatusBadRequest)
	}
	wantError(t, post(t, base+"/v2/trace/setting", `{"trace_rate": null}`), http.StatusBadRequest, "cleared")
	wantError(t, get(t, base+"/v2/models/does_not_exist/trace/setting"), http.StatusNotFound)

	c := dial(t, srv.GRPCAddr())
	resp, err := c.TraceSetting(ctxT(t), oip.TraceUpdateToProto("add_sub", oip.TraceSettings{oip.TraceCount: nil, oip.TraceLogFrequency: {"3"}}))
	if err != nil {
		t.Fatal(err)
	}
	got := oip.TraceSettingsFromProto(resp)
	if !slices.Equal(got[oip.TraceCount], []string{"-1"}) || !slices.Equal(got[oip.TraceLogFrequency], []string{"3"}) {
		t.Fatalf("gRPC model settings %v", got)
	}
	resp, err = c.TraceSetting(ctxT(t), &inferencepb.TraceSettingRequest{})
	if err != nil || !slices.Equal(oip.TraceSettingsFromProto(resp)[oip.TraceLogFrequency], []string{"0"}) {
		t.Fatalf("gRPC server settings %v, %v", resp, err)
	}
	_, err = c.TraceSetting(ctxT(t), oip.TraceUpdateToProto("", oip.TraceSettings{oip.TraceLevel: {"LOUD"}}))
	wantCode(t, err, codes.InvalidArgument)
	_, err = c.TraceSetting(ctxT(t), &inferencepb.TraceSettingRequest{ModelName: "does_not_exist"})
	wantCode(t, err, codes.NotFound)
}

// Malformed settings bodies are refused with 4xx, never a crash: deep
// nesting, long arrays, wrong shapes, on every settings route.
func TestSettingsRoutesHostile(t *testing.T) {
	srv := referencetest.Start(t)
	base := srv.HTTPURL()
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	long := `["TIMESTAMPS"` + strings.Repeat(`,"TIMESTAMPS"`, 50000) + `]`
	for _, path := range []string{"/v2/logging", "/v2/trace/setting", "/v2/models/add_sub/trace/setting"} {
		for _, body := range []string{deep, `{"trace_level":` + deep + `}`, `{"log_info":` + deep + `}`, `{"x":` + long + `}`,
			`null`, `"s"`, `{"a":1,`, strings.Repeat(" ", 1000)} {
			r := post(t, base+path, body)
			if r.status < 400 && !(strings.TrimSpace(body) == "" || body == "null") {
				t.Errorf("POST %s with %.40q: %d %s", path, body, r.status, r.body)
			}
			if r.status >= 500 {
				t.Errorf("POST %s with %.40q: %d %s", path, body, r.status, r.body)
			}
		}
	}
	// A long but valid level list is one level named many times, kept once.
	var s oip.TraceSettings
	wantJSON(t, post(t, base+"/v2/trace/setting", `{"trace_level":`+long+`}`), http.StatusOK, &s)
	if !slices.Equal(s[oip.TraceLevel], []string{"TIMESTAMPS"}) {
		t.Errorf("trace_level after a long list: %.80q", s[oip.TraceLevel])
	}
}
