package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeTemp(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "blocked.json")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadBlockedFile(t *testing.T) {
	good := `{"apiVersion":"oipkit.dev/v1alpha2","kind":"BlockedImplementation",
		"implementation":{"name":"OpenVINO Model Server","version":"2025.3"},
		"reason":"ships as container images only","commands":["oipkit conform --http http://HOST:8000 | tee out"]}`
	if !IsBlocked([]byte(good)) {
		t.Fatal("IsBlocked: false for a blocked file")
	}
	b, err := ReadBlockedFile(writeTemp(t, good))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := WriteBlocked(&out, []BlockedRow{{Blocked: b, Links: []DocLink{{Text: "notes", Href: "x/README.md"}}}}); err != nil {
		t.Fatal(err)
	}
	want := "| OpenVINO Model Server 2025.3 | ships as container images only | `oipkit conform --http http://HOST:8000 \\| tee out` | [notes](x/README.md) |\n"
	if !strings.Contains(out.String(), want) {
		t.Errorf("WriteBlocked:\n%s\nwant the row\n%s", out.String(), want)
	}

	for name, body := range map[string]string{
		"report":      `{"apiVersion":"oipkit.dev/v1alpha1","kind":"ConformanceReport"}`,
		"no reason":   `{"apiVersion":"oipkit.dev/v1alpha1","kind":"BlockedImplementation","implementation":{"name":"x"},"commands":["c"]}`,
		"no commands": `{"apiVersion":"oipkit.dev/v1alpha1","kind":"BlockedImplementation","implementation":{"name":"x"},"reason":"r"}`,
		"no name":     `{"apiVersion":"oipkit.dev/v1alpha1","kind":"BlockedImplementation","implementation":{},"reason":"r","commands":["c"]}`,
		"version":     `{"apiVersion":"v0","kind":"BlockedImplementation","implementation":{"name":"x"},"reason":"r","commands":["c"]}`,
		"not json":    `{"kind":`,
	} {
		if _, err := ReadBlockedFile(writeTemp(t, body)); err == nil {
			t.Errorf("%s: ReadBlockedFile accepted %s", name, body)
		}
	}
	if IsBlocked([]byte(`{"kind":"ConformanceReport"}`)) {
		t.Error("IsBlocked: true for a conformance report")
	}
	var empty strings.Builder
	if err := WriteBlocked(&empty, nil); err != nil || empty.Len() != 0 {
		t.Errorf("WriteBlocked(nil) wrote %q, %v", empty.String(), err)
	}
}
