package selftest

import (
	"bytes"
	"net/http"
	"strings"
)

// isGenerate reports a POST to .../generate (stream false) or
// .../generate_stream (stream true).
func isGenerate(r *http.Request, stream bool) bool {
	suffix := "/generate"
	if stream {
		suffix = "/generate_stream"
	}
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, suffix)
}

func init() {
	breakages = append(breakages, []breakage{
		{
			name: "generate-drop-id",
			rest: &restHook{out: func(r *http.Request, a *answer) {
				if isGenerate(r, false) && a.status == 200 {
					editJSON(a, func(m map[string]any) { delete(m, "id") })
				}
			}},
			failed: []string{"OIP-EXT-GEN-002"},
			warned: []string{"OIP-EXT-GEN-001"},
		},
		{
			name: "generate-stream-as-json",
			rest: &restHook{out: func(r *http.Request, a *answer) {
				if isGenerate(r, true) && a.status == 200 {
					a.header.Set("Content-Type", "application/json")
				}
			}},
			failed: []string{"OIP-EXT-GEN-004"},
		},
		{
			name: "generate-stream-without-data-fields",
			rest: &restHook{out: func(r *http.Request, a *answer) {
				if isGenerate(r, true) && a.status == 200 {
					a.body = bytes.ReplaceAll(a.body, []byte("data: "), nil)
				}
			}},
			failed: []string{"OIP-EXT-GEN-004"},
		},
		{
			name: "generate-errors-in-plain-text",
			rest: &restHook{out: func(r *http.Request, a *answer) {
				if (isGenerate(r, false) || isGenerate(r, true)) && a.status >= 400 {
					a.header.Set("Content-Type", "text/plain")
					a.body = []byte("generation failed")
				}
			}},
			failed: []string{"OIP-EXT-GEN-004", "OIP-EXT-GEN-005"},
		},
		{
			// One streamed word differs from the fixture's (and from the
			// word /generate answers).
			name: "generate-stream-text-differs",
			rest: &restHook{out: func(r *http.Request, a *answer) {
				if isGenerate(r, true) && a.status == 200 {
					a.body = bytes.Replace(a.body, []byte("same "), []byte("sane "), 1)
				}
			}},
			failed: []string{"OIP-EXT-GEN-008"},
		},
		{
			name: "generate-accepts-missing-text-input",
			rest: &restHook{out: func(r *http.Request, a *answer) {
				if isGenerate(r, false) && a.status == 400 && strings.Contains(string(a.body), "text_input") {
					a.status = 200
					a.header.Set("Content-Type", "application/json")
					a.body = []byte(`{"model_name":"text_gen","model_version":"1","text_output":""}`)
				}
			}},
			lenient: []string{"OIP-EXT-GEN-003"},
		},
	}...)
}
