package reference_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/oipkit/oipkit/reference/referencetest"
)

func TestGenerate(t *testing.T) {
	srv := referencetest.Start(t)
	url := srv.HTTPURL() + "/v2/models/text_gen/generate"
	var got map[string]string
	wantJSON(t, post(t, url, `{"id":"g1","text_input":"the quick  brown fox","parameters":{"max_tokens":3}}`), http.StatusOK, &got)
	if got["id"] != "g1" || got["model_name"] != "text_gen" || got["model_version"] != "1" || got["text_output"] != "the quick  brown " {
		t.Fatalf("generate = %v", got)
	}
	wantError(t, post(t, url, `{"id":"g1"}`), http.StatusBadRequest, "text_input")
	wantError(t, post(t, url, `{"text_input":"a","max_tokens":0}`), http.StatusBadRequest, "max_tokens")
	wantError(t, post(t, srv.HTTPURL()+"/v2/models/add_sub/generate", `{"text_input":"a"}`), http.StatusBadRequest, "text_input")
	wantError(t, post(t, srv.HTTPURL()+"/v2/models/nope/generate", `{"text_input":"a"}`), http.StatusNotFound)
	if r := get(t, url); r.status != http.StatusMethodNotAllowed {
		t.Fatalf("GET generate: %d", r.status)
	}
}

func sseEvents(t *testing.T, body string) []map[string]string {
	t.Helper()
	var out []map[string]string
	for _, ev := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok {
			t.Fatalf("event %q is not one data line", ev)
		}
		var m map[string]string
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("event %q: %v", ev, err)
		}
		out = append(out, m)
	}
	return out
}

func TestGenerateStream(t *testing.T) {
	srv := referencetest.Start(t)
	url := srv.HTTPURL() + "/v2/models/text_gen/generate_stream"
	r := post(t, url, `{"id":"s","text_input":"a b c"}`)
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "text/event-stream; charset=utf-8" {
		t.Fatalf("generate_stream: %d %q %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	evs := sseEvents(t, string(r.body))
	var text string
	for _, e := range evs {
		if e["id"] != "s" || e["model_name"] != "text_gen" {
			t.Fatalf("event %v", e)
		}
		text += e["text_output"]
	}
	if len(evs) != 3 || text != "a b c" {
		t.Fatalf("%d events, text %q", len(evs), text)
	}
	// An error after the first event is an event; before it, an HTTP error.
	r = post(t, url, `{"text_input":"a b c","fail_after":1}`)
	evs = sseEvents(t, string(r.body))
	if r.status != http.StatusOK || len(evs) != 2 || evs[0]["text_output"] != "a " || !strings.Contains(evs[1]["error"], "failed after 1") {
		t.Fatalf("error mid-stream: %d %v", r.status, evs)
	}
	wantError(t, post(t, url, `{"text_input":"a b c","fail_after":0}`), http.StatusInternalServerError, "failed after 0")
	wantError(t, post(t, url, `{"nothing":1}`), http.StatusBadRequest, "text_input")
}
