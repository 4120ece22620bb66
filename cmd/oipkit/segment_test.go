package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/oipkit/oipkit/loadgen"
	"github.com/oipkit/oipkit/reference/referencetest"
	"github.com/oipkit/oipkit/verdict"
)

// oipkit runs the CLI in-process and returns its exit status and what it
// wrote on stderr. The commands write to os.Stderr, which it swaps for a
// pipe: calls that run concurrently share it.
func oipkit(args ...string) (int, string) {
	stderrMu.Lock()
	defer stderrMu.Unlock()
	return runCapturingStderr(args)
}

var stderrMu sync.Mutex

func runCapturingStderr(args []string) (int, string) {
	pr, pw, err := os.Pipe()
	if err != nil {
		panic(err)
	}
	saved := os.Stderr
	os.Stderr = pw
	var captured bytes.Buffer
	done := make(chan struct{})
	go func() { captured.ReadFrom(pr); close(done) }()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	os.Stderr = saved
	pw.Close()
	<-done
	pr.Close()
	return code, stderr.String() + captured.String()
}

// oipkitConcurrently runs the CLI in-process without capturing stderr, so
// that several commands can run at once.
func oipkitConcurrently(args ...string) int {
	var stdout, stderr bytes.Buffer
	return run(context.Background(), args, &stdout, &stderr)
}

func TestSegmentFlags(t *testing.T) {
	srv := referencetest.Start(t)
	dir := t.TempDir()
	base := []string{"load", "--grpc", srv.GRPCAddr(), "--model", "add_sub", "--duration", "200ms", "--progress", "never"}
	with := func(more ...string) []string { return append(append([]string(nil), base...), more...) }
	past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	for _, c := range []struct {
		name string
		args []string
		code int
	}{
		{"index at the count", with("--segment", "4/4"), verdict.ExitUsage},
		{"not a segment", with("--segment", "2"), verdict.ExitUsage},
		{"unexpanded index", with("--segment", "$(JOB_COMPLETION_INDEX)/4"), verdict.ExitUsage},
		{"threshold on a segment", with("--segment", "0/2", "--concurrency", "2", "--threshold", "p99<1s"), verdict.ExitUsage},
		{"sweep in segments", with("--segment", "0/2", "--concurrency-range", "2:4"), verdict.ExitUsage},
		{"search in segments", with("--segment", "0/2", "--slo", "p99<1s"), verdict.ExitUsage},
		{"fewer workers than segments", with("--segment", "0/4", "--concurrency", "2"), verdict.ExitUsage},
		{"bad start time", with("--start-at", "tomorrow"), verdict.ExitUsage},
		{"start time past", with("--segment", "1/2", "--rate", "100", "--start-at", past, "--output", filepath.Join(dir, "past.json")), verdict.ExitNotRun},
		{"empty start: no shared start", with("--segment", "1/2", "--concurrency", "2", "--start-at=", "--output", filepath.Join(dir, "s1.json")), verdict.ExitPass},
		// A segment is not gated: every request failing is a finding for
		// the merged result, not the segment's exit status.
		{"segment with failures", []string{"load", "--grpc", srv.GRPCAddr(), "--model", "delay", "--timeout", "2ms", "--duration", "200ms", "--concurrency", "2", "--segment", "0/2", "--progress", "never"}, verdict.ExitPass},
	} {
		if code, stderr := oipkit(c.args...); code != c.code {
			t.Errorf("%s: oipkit %q: exit %d, want %d\n%s", c.name, c.args, code, c.code, stderr)
		}
	}
	// The segment that could not start leaves a record of itself.
	r := readResult(t, filepath.Join(dir, "past.json"))
	if r.Config.Load.Segment == nil || r.Config.Load.Segment.Index != 1 || r.EndReason != loadgen.EndError || r.TestID == "" {
		t.Errorf("the late segment's result: segment %v, end %s, test %q", r.Config.Load.Segment, r.EndReason, r.TestID)
	}
	r = readResult(t, filepath.Join(dir, "s1.json"))
	if r.Clock == nil || r.Clock.Error == "" {
		t.Errorf("a gRPC segment of the reference server: clock %+v, want an error (its gRPC answers carry no date)", r.Clock)
	}
	// An empty folder: no segment left a result.
	if code, _ := oipkit("report", t.TempDir()); code != verdict.ExitNotRun {
		t.Errorf("report of an empty folder: exit %d, want %d", code, verdict.ExitNotRun)
	}
}

// runSegments runs oipkit load once per segment, concurrently, with a
// shared start, writing DIR/segment-I.json.
func runSegmentProcesses(t *testing.T, dir string, n int, args ...string) {
	t.Helper()
	start := time.Now().Add(2500 * time.Millisecond).UTC().Format(time.RFC3339Nano)
	var wg sync.WaitGroup
	for i := range n {
		a := append(append([]string(nil), args...), "--segment", fmt.Sprintf("%d/%d", i, n), "--start-at", start,
			"--progress", "never", "--output", filepath.Join(dir, fmt.Sprintf("segment-%d.json", i)))
		wg.Go(func() {
			if code := oipkitConcurrently(a...); code != verdict.ExitPass && code != verdict.ExitInconclusive {
				t.Errorf("segment %d: oipkit %q: exit %d", i, a, code)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
}

// TestDistributedLoadOverLoopback runs a test in two segment processes
// against the reference server over REST and merges them with oipkit
// report: the merged result has the schedule's request count, the sum of
// the segments' histograms bin for bin, and it is gated; a missing
// segment makes it incomplete, another test's segment is refused.
func TestDistributedLoadOverLoopback(t *testing.T) {
	srv := referencetest.Start(t)
	dir := t.TempDir()
	segs := filepath.Join(dir, "segments")
	if err := os.Mkdir(segs, 0o755); err != nil {
		t.Fatal(err)
	}
	test := []string{"load", "--http", srv.HTTPURL(), "--model", "add_sub", "--rate", "300", "--arrival", "poisson",
		"--duration", "1s", "--warmup", "200ms", "--interval", "250ms"}
	runSegmentProcesses(t, segs, 2, test...)

	merged := filepath.Join(dir, "merged.json")
	html := filepath.Join(dir, "merged.html")
	code, stderr := oipkit("report", "--threshold", "p99<10s", "--output", merged, "--html", html, segs)
	if code != verdict.ExitPass && code != verdict.ExitInconclusive {
		t.Fatalf("report: exit %d\n%s", code, stderr)
	}
	m := readResult(t, merged)
	s0, s1 := readResult(t, filepath.Join(segs, "segment-0.json")), readResult(t, filepath.Join(segs, "segment-1.json"))
	if s0.TestID != s1.TestID || m.TestID != s0.TestID || m.Segments == nil || !m.Segments.Complete() {
		t.Fatalf("test ids %s %s, merged %s, segments %+v", s0.TestID, s1.TestID, m.TestID, m.Segments)
	}
	// The single-process schedule of this test, counted from the schedule.
	p, _ := loadgen.ParseRate("300")
	sched := loadgen.NewSchedule(p, loadgen.ArrivalPoisson, 1)
	var want int64
	for {
		off, ok := sched.Next()
		if !ok || off >= time.Second {
			break
		}
		want++
	}
	if m.Counts.Scheduled != want || s0.Counts.Scheduled+s1.Counts.Scheduled != want {
		t.Errorf("merged scheduled %d (segments %d + %d), the schedule has %d", m.Counts.Scheduled, s0.Counts.Scheduled, s1.Counts.Scheduled, want)
	}
	for name, pair := range map[string][3]*loadgen.Histogram{
		"response": {m.Histograms.Response, s0.Histograms.Response, s1.Histograms.Response},
		"service":  {m.Histograms.Service, s0.Histograms.Service, s1.Histograms.Service},
		"send lag": {m.Histograms.SendLag, s0.Histograms.SendLag, s1.Histograms.SendLag},
	} {
		sum := pair[1].Clone()
		sum.Merge(pair[2])
		if !sum.Equal(pair[0]) {
			t.Errorf("the merged %s histogram is not the sum of the segments'", name)
		}
	}
	if len(m.Thresholds) == 0 || m.Thresholds[0].Threshold != "p99<10s" {
		t.Errorf("the merged result was not gated: %+v", m.Thresholds)
	}
	if !s0.Start.Equal(s1.Start) || len(m.Intervals) == 0 {
		t.Errorf("segments started at %v and %v; %d merged intervals", s0.Start, s1.Start, len(m.Intervals))
	}
	if s0.Clock == nil || s0.Clock.Error != "" {
		t.Errorf("segment 0 has no clock estimate over REST: %+v", s0.Clock)
	}
	if b, err := os.ReadFile(html); err != nil || !bytes.Contains(b, []byte("segments merged")) {
		t.Errorf("the HTML report of the merged result: %v", err)
	}

	// Thresholds gate the merged result.
	// A generator-bound segment (a loaded machine) makes the verdict
	// inconclusive before any threshold: its latencies overstate the server's.
	if code, stderr := oipkit("report", "--threshold", "p50<1ns", segs); code != verdict.ExitFailed &&
		!(code == verdict.ExitInconclusive && strings.Contains(stderr, "generator-bound")) {
		t.Errorf("a failing threshold on the merged result: exit %d, want %d\n%s", code, verdict.ExitFailed, stderr)
	}
	// One segment alone is an incomplete test, even when a threshold fails.
	if code, stderr := oipkit("report", "--threshold", "p50<1ns", filepath.Join(segs, "segment-1.json")); code != verdict.ExitInconclusive ||
		!strings.Contains(stderr, "1 of 2 segments missing (0/2)") {
		t.Errorf("one of two segments: exit %d, want %d\n%s", code, verdict.ExitInconclusive, stderr)
	}
	// Another test's segment is refused, unless forced.
	other := filepath.Join(dir, "other")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	otherTest := append(append([]string(nil), test[:len(test)-2]...), "--interval", "500ms")
	runSegmentProcesses(t, other, 2, otherTest...)
	mixed := []string{filepath.Join(segs, "segment-0.json"), filepath.Join(other, "segment-1.json")}
	if code, stderr := oipkit(append([]string{"report"}, mixed...)...); code != verdict.ExitUsage || !strings.Contains(stderr, "different tests") {
		t.Errorf("segments of two tests: exit %d, want %d\n%s", code, verdict.ExitUsage, stderr)
	}
	if code, stderr := oipkit(append([]string{"report", "--force"}, mixed...)...); code == verdict.ExitUsage {
		t.Errorf("segments of two tests, forced: exit %d\n%s", code, stderr)
	}
	// The same segment twice overlaps.
	if code, stderr := oipkit("report", filepath.Join(segs, "segment-0.json"), filepath.Join(segs, "segment-0.json"), filepath.Join(segs, "segment-1.json")); code != verdict.ExitUsage ||
		!strings.Contains(stderr, "given twice") {
		t.Errorf("a segment twice: exit %d\n%s", code, stderr)
	}
}

// TestKubernetesLoadJobCommandLines runs the command lines of the
// Kubernetes load test (deploy/kubernetes/load) as its pods would, with
// its ConfigMap's values (the target, rate and duration scaled down): the
// Indexed Job's segments with their completion indexes, then the merge
// Job's report over the folder they wrote.
func TestKubernetesLoadJobCommandLines(t *testing.T) {
	srv := referencetest.Start(t)
	root := filepath.Join("..", "..", "deploy", "kubernetes", "load")
	var kust struct {
		ConfigMapGenerator []struct {
			Name     string   `json:"name"`
			Literals []string `json:"literals"`
		} `json:"configMapGenerator"`
	}
	readYAML(t, filepath.Join(root, "kustomization.yaml"), &kust)
	env := map[string]string{}
	for _, g := range kust.ConfigMapGenerator {
		for _, l := range g.Literals {
			k, v, _ := strings.Cut(l, "=")
			env[k] = v
		}
	}
	if env["SEGMENTS"] == "" || env["TARGET_FLAG"] == "" || env["START_AT"] != "" {
		t.Fatalf("the ConfigMap's literals: %v", env)
	}
	env["TARGET"], env["RATE"], env["DURATION"] = srv.HTTPURL(), "200", "1s"
	env["SEGMENTS"] = "3"
	env["START_AT"] = time.Now().Add(2500 * time.Millisecond).UTC().Format(time.RFC3339Nano)

	type job struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Args         []string `json:"args"`
						VolumeMounts []struct {
							MountPath string `json:"mountPath"`
						} `json:"volumeMounts"`
					} `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	var load, merge job
	readYAML(t, filepath.Join(root, "job.yaml"), &load)
	readYAML(t, filepath.Join(root, "merge-job.yaml"), &merge)
	segments := t.TempDir() // the volume's RUN/segments, made by the kubelet
	mergedDir := t.TempDir()
	mounts := map[string]string{"/results": segments, "/segments": segments, "/merged": mergedDir}
	expand := func(args []string, index int) []string {
		ref := regexp.MustCompile(`\$\(([A-Z_]+)\)`)
		var out []string
		for _, a := range args {
			a = ref.ReplaceAllStringFunc(a, func(m string) string {
				name := m[2 : len(m)-1]
				if name == "JOB_COMPLETION_INDEX" {
					return fmt.Sprint(index)
				}
				v, ok := env[name]
				if !ok {
					t.Fatalf("%s: no value for %s", a, name)
				}
				return v
			})
			for mount, d := range mounts {
				a = strings.Replace(a, "="+mount+"/", "="+d+"/", 1)
				if a == mount {
					a = d
				}
			}
			out = append(out, a)
		}
		return out
	}
	var wg sync.WaitGroup
	for i := range 3 {
		args := expand(load.Spec.Template.Spec.Containers[0].Args, i)
		args = append(args, "--progress=never")
		wg.Go(func() {
			if code := oipkitConcurrently(args...); code != verdict.ExitPass && code != verdict.ExitInconclusive {
				t.Errorf("segment pod %d: oipkit %q: exit %d", i, args, code)
			}
		})
	}
	wg.Wait()
	args := expand(merge.Spec.Template.Spec.Containers[0].Args, 0)
	if code, stderr := oipkit(args...); code != verdict.ExitPass && code != verdict.ExitInconclusive { // 4: generator-bound on a busy machine
		t.Fatalf("merge pod: oipkit %q: exit %d\n%s", args, code, stderr)
	}
	m := readResult(t, filepath.Join(mergedDir, "result.json"))
	if m.Segments == nil || !m.Segments.Complete() || m.Segments.Count != 3 || m.Counts.Scheduled != 200 {
		t.Errorf("merged: segments %+v, scheduled %d (want 200: 200/s for 1s)", m.Segments, m.Counts.Scheduled)
	}
	// A pod that never wrote its result: the merge is incomplete (exit 4).
	if err := os.Remove(filepath.Join(segments, "segment-2.json")); err != nil {
		t.Fatal(err)
	}
	if code, stderr := oipkit(args...); code != verdict.ExitInconclusive || !strings.Contains(stderr, "segments missing (2/3)") {
		t.Errorf("merge with segment 2 missing: exit %d, want %d\n%s", code, verdict.ExitInconclusive, stderr)
	}
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// As kubectl reads a manifest: YAML to JSON, then the JSON field names.
	var doc any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	js, err := json.Marshal(doc)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if err := json.Unmarshal(js, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
