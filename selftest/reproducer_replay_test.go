package selftest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/oipkit/oipkit/conformance/report"
)

// TestSharedMemoryReproducerReplays: a shared memory finding's request
// names a region the spec registered in an object it created, so its
// reproducer makes both first. Pasted alone after the run, on a server
// that maps regions from the object's start, it shows the recorded wrong
// answer; the request alone does not, and the reproducer leaves no object
// or region behind. The gRPC case needs grpcurl (make grpcurl).
func TestSharedMemoryReproducerReplays(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	for _, c := range []struct {
		b    breakage
		grpc bool
	}{{registerIgnoresOffset, false}, {grpcRegisterIgnoresOffset, true}} {
		t.Run(c.b.name, func(t *testing.T) {
			if c.grpc {
				if _, err := os.Stat("../.tools/bin/grpcurl"); err != nil {
					t.Skip("grpcurl is not installed (make grpcurl)")
				}
			}
			replaySharedMemoryFinding(t, c.b, c.grpc)
		})
	}
}

func replaySharedMemoryFinding(t *testing.T, b breakage, grpc bool) {
	httpURL, run, f := findingOn(t, b, "OIP-EXT-SHM-007", func(req report.Message) bool {
		return grpc && strings.HasSuffix(req.Target, "/ModelInfer") || !grpc && strings.HasSuffix(req.Target, "/infer")
	})
	rep := f.Reproducer
	keys := regexp.MustCompile(`/dev/shm/(oipkit_conform_[0-9_]+)`).FindAllStringSubmatch(rep, -1)
	if len(keys) == 0 || !strings.Contains(rep, "egister") || !strings.Contains(rep, "nregister") {
		t.Fatalf("the reproducer neither makes the object nor registers the region:\n%s", rep)
	}
	if len(rep) > 8<<10 {
		t.Errorf("the reproducer is %d bytes: an object filled with one byte is not written out byte by byte:\n%s", len(rep), rep)
	}

	checkReplayed(t, f, grpc)
	alone, rc := shell(t, report.Reproduce(f.Evidence, run.report.Targets))
	if rc == 0 && (grpc || strings.HasPrefix(alone, "HTTP/1.1 200")) {
		t.Errorf("the request alone, without the setup, succeeded too: the setup is not what makes it show the defect\n%s", alone)
	}
	for _, k := range keys {
		if _, err := os.Stat("/dev/shm/" + k[1]); !os.IsNotExist(err) {
			t.Errorf("the reproducer left /dev/shm/%s behind (%v)", k[1], err)
		}
	}
	var regions []map[string]any
	if err := json.Unmarshal([]byte(getBody(t, httpURL+"/v2/systemsharedmemory/status")), &regions); err != nil || len(regions) != 0 {
		t.Errorf("regions left registered after the reproducer: %v (%v)", regions, err)
	}
}

// TestSettingsReproducerPutsBack: a finding on an update the server took
// wrongly has a reproducer that sends the update, shows the recorded
// answer, and then puts the setting back, as the spec did: pasted, it
// leaves the server's settings as it found them.
func TestSettingsReproducerPutsBack(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	httpURL, _, f := findingOn(t, negativeFrequencyWraps, "OIP-EXT-TRACE-003", func(req report.Message) bool {
		return req.Body == `{"log_frequency": "-1"}`
	})
	before := getBody(t, httpURL+"/v2/trace/setting")
	checkReplayed(t, f, false)
	if after := getBody(t, httpURL+"/v2/trace/setting"); !sameJSON(after, before) {
		t.Errorf("the trace settings were %s before the reproducer and %s after it: it did not put log_frequency back\n%s", before, after, f.Reproducer)
	}
}

// findingOn runs the suite against a server broken as b and returns the
// server's REST URL, the run, and the first finding of requirement id on
// a request that match accepts.
func findingOn(t *testing.T, b breakage, id string, match func(report.Message) bool) (string, conformRun, report.Finding) {
	t.Helper()
	httpURL, grpcAddr := brokenServer(t, b)
	run := conform(t, "--http", httpURL, "--grpc", grpcAddr)
	if run.report == nil {
		t.Fatalf("no report (exit %d)\n%s", run.exit, run.output)
	}
	q, _ := run.report.Requirement(id)
	for _, f := range q.Findings {
		if f.Evidence != nil && match(f.Evidence.Request) {
			return httpURL, run, f
		}
	}
	t.Fatalf("%s has no finding on the request looked for: %+v", id, q.Findings)
	return "", run, report.Finding{}
}

// checkReplayed runs f's reproducer and checks that it answers what f
// recorded: curl -i's status and JSON body, or grpcurl's OK message.
func checkReplayed(t *testing.T, f report.Finding, grpc bool) {
	t.Helper()
	out, rc := shell(t, f.Reproducer)
	status, body := "gRPC OK", out
	if !grpc {
		status, body = curlAnswer(out)
	}
	if rc != 0 || status != f.Evidence.Response.Status || !sameJSON(body, f.Evidence.Response.Body) {
		t.Errorf("the reproducer (exit %d) answered %q %s\nrecorded %q %s\n%s", rc, status, body, f.Evidence.Response.Status, f.Evidence.Response.Body, f.Reproducer)
	}
}

// getBody is the body of GET url.
func getBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// shell runs script with bash from the repository's root, as a maintainer
// pastes it: its standard output and exit status.
func shell(t *testing.T, script string) (string, int) {
	t.Helper()
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = ".."
	if tools, err := filepath.Abs("../.tools/bin"); err == nil {
		cmd.Env = append(os.Environ(), "PATH="+tools+string(filepath.ListSeparator)+os.Getenv("PATH"))
	}
	var out bytes.Buffer
	cmd.Stdout = &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), 0
}

// curlAnswer splits curl -i's output into the status as the evidence
// spells it ("HTTP 200") and the body.
func curlAnswer(out string) (status, body string) {
	head, body, _ := strings.Cut(strings.ReplaceAll(out, "\r\n", "\n"), "\n\n")
	line, _, _ := strings.Cut(head, "\n")
	if fields := strings.Fields(line); len(fields) >= 2 {
		status = "HTTP " + fields[1]
	}
	return status, body
}

func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}
