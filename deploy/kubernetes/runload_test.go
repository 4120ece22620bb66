package kubernetes

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunLoadOverlay renders the overlay run-load.sh writes: it must keep
// every invariant of the load test with the number of segments it was
// given, and start them in the future.
func TestRunLoadOverlay(t *testing.T) {
	overlay := t.TempDir()
	out, err := exec.Command("bash", "run-load.sh", "--overlay-only", overlay, "-n", "6", "--run", "r1", "--lead", "90").CombinedOutput()
	if err != nil {
		t.Fatalf("run-load.sh: %v\n%s", err, out)
	}
	r := render(t, overlay)
	j := r.jobs["oipkit-load"]
	if j == nil {
		t.Fatal("no load Job")
	}
	r.checkPod(t, "Job oipkit-load", &j.Spec.Template.Spec)
	r.checkLoad(t, j)
	cm := r.configMap("oipkit-load")
	if cm.Data["SEGMENTS"] != "6" || *j.Spec.Completions != 6 || cm.Data["RUN"] != "r1" {
		t.Errorf("SEGMENTS %q, completions %d, RUN %q", cm.Data["SEGMENTS"], *j.Spec.Completions, cm.Data["RUN"])
	}
	start, err := time.Parse(time.RFC3339, cm.Data["START_AT"])
	if err != nil || !start.After(time.Now().Add(30*time.Second)) {
		t.Errorf("START_AT %q: want an RFC 3339 time about 90s ahead (%v)", cm.Data["START_AT"], err)
	}

	for _, bad := range [][]string{{"-n", "0"}, {"-n", "four"}, {"--lead", "1m"}, {"--run", "a/b"}, {"--bogus"}} {
		args := append([]string{"run-load.sh", "--overlay-only", t.TempDir()}, bad...)
		if err := exec.Command("bash", args...).Run(); err == nil {
			t.Errorf("run-load.sh %q: accepted", bad)
		}
	}
}

// fakeKubectl answers like a cluster where both Jobs finish at once and the
// merge pod exits with mergeExit ("" for no exit status), and logs every
// call.
const fakeKubectl = `#!/usr/bin/env bash
echo "$*" >> "$KUBECTL_LOG"
case "$*" in
*"get job oipkit-load-merge"*) echo -n "Failed " ;;
*"get job oipkit-load "*) echo -n "Complete " ;;
*"get pods"*) echo -n "$MERGE_EXIT" ;;
*"logs job/oipkit-load-merge"*) echo "merged 4 segments" ;;
esac
`

// TestRunLoadFlow runs run-load.sh against a fake kubectl: the merge is
// resumed only after the segments finished, and the script exits with the
// merge pod's status.
func TestRunLoadFlow(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "kubectl"), []byte(fakeKubectl), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mergeExit string
		want      int
	}{{"0", 0}, {"3", 3}, {"4", 4}, {"", 2}} {
		log := filepath.Join(t.TempDir(), "calls")
		cmd := exec.Command("bash", "run-load.sh", "--namespace", "perf", "-n", "4", "--lead", "0")
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "KUBECTL_LOG="+log, "MERGE_EXIT="+c.mergeExit)
		out, err := cmd.CombinedOutput()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.want {
			t.Errorf("merge exit %q: run-load.sh exited %d, want %d\n%s", c.mergeExit, code, c.want, out)
		}
		b, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		calls := strings.Split(strings.TrimSpace(string(b)), "\n")
		want := []string{"delete job oipkit-load oipkit-load-merge", "apply -k", "get job oipkit-load ",
			"patch job oipkit-load-merge", "get job oipkit-load-merge", "logs job/oipkit-load-merge", "get pods"}
		if len(calls) != len(want) {
			t.Fatalf("kubectl calls:\n%s", b)
		}
		for i, w := range want {
			if !strings.Contains(calls[i]+" ", w) || !strings.HasPrefix(calls[i], "--namespace perf ") {
				t.Errorf("call %d = %q, want %q in namespace perf", i, calls[i], w)
			}
		}
	}
}
