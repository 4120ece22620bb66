package loadgen

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/oipkit/oipkit/client"
)

// A Segment is one part of a test split over several generator processes
// (machines, pods): segment Index of Count, numbered from 0, like a
// Kubernetes Indexed Job's completion index. The split rules:
//
//   - open loop: the whole test's schedule is computed by every segment,
//     and segment I sends arrival i exactly when i mod Count = I, so the
//     segments' intended start times are disjoint and their union is the
//     single-process schedule, bit for bit — constant or Poisson arrivals,
//     constant, step or linear rates alike. A request-count limit (-n, and
//     a warm-up count) bounds the arrival index, so segment I sends the
//     arrivals below the limit that are its own: total/Count of them, plus
//     one for the first total mod Count segments;
//   - closed loop: the concurrency and a request-count limit are split the
//     same way (total/Count each, one more for the first total mod Count
//     segments), so they add up to the test's.
//
// Everything else is the test's: duration, warm-up, interval, inputs,
// seed. Generator resources — the in-flight cap, connections — are each
// process's own.
type Segment struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// MaxSegments bounds the number of segments of a test (Kubernetes caps an
// Indexed Job at 100000 completions).
const MaxSegments = 100000

// ParseSegment parses "I/N": segment I of N, 0 ≤ I < N.
func ParseSegment(s string) (Segment, error) {
	is, ns, ok := strings.Cut(s, "/")
	if !ok {
		return Segment{}, fmt.Errorf("segment %q: want INDEX/COUNT, e.g. 0/4 (segments are numbered from 0)", s)
	}
	i, err1 := strconv.Atoi(strings.TrimSpace(is))
	n, err2 := strconv.Atoi(strings.TrimSpace(ns))
	if err1 != nil || err2 != nil {
		return Segment{}, fmt.Errorf("segment %q: want INDEX/COUNT as two whole numbers, e.g. 0/4", s)
	}
	seg := Segment{Index: i, Count: n}
	return seg, seg.check()
}

func (s Segment) check() error {
	switch {
	case s.Count < 1 || s.Count > MaxSegments:
		return fmt.Errorf("segment %s: the count must be from 1 to %d", s, MaxSegments)
	case s.Index < 0 || s.Index >= s.Count:
		return fmt.Errorf("segment %s: the index must be below the count (the segments of %d are numbered 0 to %d)", s, s.Count, s.Count-1)
	}
	return nil
}

// String returns "I/N".
func (s Segment) String() string { return strconv.Itoa(s.Index) + "/" + strconv.Itoa(s.Count) }

// Share returns the segment's part of total when total is split over the
// segments as evenly as possible: total/Count, plus one for the first
// total mod Count segments. The shares of all segments add up to total.
func (s Segment) Share(total int64) int64 {
	n := int64(s.Count)
	if n <= 1 {
		return total
	}
	q := total / n
	if int64(s.Index) < total%n {
		q++
	}
	return q
}

// whole is the segment of an unsplit run.
var whole = Segment{Index: 0, Count: 1}

// segment returns the run's segment: whole when it is not split.
func (l LoadConfig) segment() Segment {
	if l.Segment == nil {
		return whole
	}
	return *l.Segment
}

// identityVersion changes whenever the split rules or the schedule's
// arithmetic change, so that segments of different versions, which would
// not add up to one schedule, do not share an identity.
const identityVersion = 1

// testIdentity is what a test's identity hashes: everything that decides
// the load a server receives — target, protocol, model, payloads, load
// model, timing — and nothing that belongs to one process or run: the
// segment, the start time, output and progress settings, generator
// resources (in-flight cap, connections, ready timeout), self-check
// tolerances and the verdict's gates (thresholds, error bound,
// percentile).
type testIdentity struct {
	Version int `json:"v"`
	Target  struct {
		HTTP, GRPC   string
		Protocol     client.Protocol
		Model        string
		ModelVersion string
		TLS          bool
		Host         string
		Headers      []string // names only: values are often tokens
		Timeout      Duration
	}
	Inputs struct {
		File         string // SHA-256 of the file's content, not its path
		Data         string
		Shapes       []string
		StringLength int
		Parameters   []string
		Validate     bool
		Seed         uint64
	}
	Load struct {
		Concurrency      int
		Rate             string
		Arrival          Arrival
		Duration         Duration
		Warmup           Duration
		WarmupRequests   int64
		Interval         Duration
		Requests         int64
		Stability        *StabilityConfig
		ConcurrencyRange string
		RateRange        string
		SLO              []string
		SLOResolution    float64
	}
}

// TestID returns the identity of the test a normalized configuration
// describes: the SHA-256 (hex) of its load-defining settings (see
// testIdentity). The segments of one test share it, and so does a
// single-process run of the same test; an input-data file counts by its
// content, so the segments may read it from different paths.
func TestID(c Config) string {
	var id testIdentity
	id.Version = identityVersion
	t := &id.Target
	t.HTTP, t.GRPC, t.Protocol = c.Target.HTTP, c.Target.GRPC, c.Target.Protocol
	t.Model, t.ModelVersion = c.Target.Model, c.Target.ModelVersion
	t.TLS = c.Target.TLSFiles.Enabled() || strings.HasPrefix(c.Target.HTTP, "https://")
	t.Host, t.Timeout = c.Target.Host, c.Target.Timeout
	for _, h := range c.Target.Headers {
		k, _, _ := strings.Cut(h, ":")
		t.Headers = append(t.Headers, strings.ToLower(strings.TrimSpace(k)))
	}
	in := &id.Inputs
	if c.Inputs.File != "" {
		in.File = fileDigest(c.Inputs.File)
	}
	in.Data, in.Shapes, in.StringLength = c.Inputs.Data, c.Inputs.Shapes, c.Inputs.StringLength
	in.Parameters, in.Validate, in.Seed = c.Inputs.Parameters, c.Inputs.Validate, c.Inputs.Seed
	l, cl := &id.Load, c.Load
	l.Concurrency, l.Rate, l.Arrival = cl.Concurrency, cl.Rate.String(), cl.Arrival
	l.Duration, l.Warmup, l.WarmupRequests, l.Interval, l.Requests = cl.Duration, cl.Warmup, cl.WarmupRequests, cl.Interval, cl.Requests
	l.Stability, l.ConcurrencyRange, l.RateRange = cl.Stability, cl.ConcurrencyRange.String(), cl.RateRange.String()
	l.SLO, l.SLOResolution = ThresholdTexts(c.SLO), c.SLOResolution
	b, _ := json.Marshal(id) // plain data: cannot fail
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// fileDigest is "sha256:HEX" of a file's content, or "unreadable: PATH"
// (the run itself then fails reading it).
func fileDigest(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "unreadable: " + path
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "unreadable: " + path
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// ShortID is the first 12 hex digits of a test identity, for messages.
func ShortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// SegmentSet describes the segments a merged result was made of.
type SegmentSet struct {
	// TestID is the test's identity (the first segment's, in a forced
	// merge of different tests).
	TestID string `json:"testId"`
	// Count is the number of segments the test was split into.
	Count int `json:"count"`
	// Merged lists the segments whose runs completed and were merged.
	Merged []int `json:"merged"`
	// Missing lists the segments no result was given for.
	Missing []int `json:"missing,omitempty"`
	// Failed lists the segments whose runs did not complete: they could
	// not start, or were interrupted (what they measured is merged).
	Failed []SegmentFailure `json:"failed,omitempty"`
	// Overlaps names results that claim the same requests: the same
	// segment twice, or segments of different splits (a forced merge).
	Overlaps []string `json:"overlaps,omitempty"`
	// StartAt is the segments' shared start (zero without one).
	StartAt time.Time `json:"startAt,omitzero"`
	// StartSpread is how far apart the segments' measurements started, by
	// their own clocks: zero with a shared start.
	StartSpread Duration `json:"startSpread"`
	// Clocks are the segments' estimates of the target's clock against
	// their own; ClockSpread is the largest difference between two of
	// them and ClockPrecision the sum of their two precisions (set when at
	// least two segments have an estimate).
	Clocks         []SegmentClock `json:"clocks,omitempty"`
	ClockSpread    *Duration      `json:"clockSpread,omitempty"`
	ClockPrecision *Duration      `json:"clockPrecision,omitempty"`
}

// SegmentFailure is a segment whose run did not complete, and why.
type SegmentFailure struct {
	Index  int    `json:"index"`
	Reason string `json:"reason"`
}

// SegmentClock is one segment's clock-offset estimate.
type SegmentClock struct {
	Index int `json:"index"`
	ClockOffset
}

// Complete reports whether every segment of the test completed and was
// merged exactly once.
func (s *SegmentSet) Complete() bool {
	return len(s.Missing) == 0 && len(s.Failed) == 0 && len(s.Overlaps) == 0 && len(s.Merged) == s.Count
}

// Incomplete lists why the merged result does not cover the whole test.
func (s *SegmentSet) Incomplete() []string {
	var why []string
	if len(s.Missing) > 0 {
		var names []string
		for _, i := range s.Missing {
			names = append(names, Segment{i, s.Count}.String())
		}
		why = append(why, fmt.Sprintf("incomplete: %d of %d segments missing (%s)", len(s.Missing), s.Count, strings.Join(names, ", ")))
	}
	for _, f := range s.Failed {
		why = append(why, fmt.Sprintf("incomplete: segment %s did not complete: %s", Segment{f.Index, s.Count}, f.Reason))
	}
	for _, o := range s.Overlaps {
		why = append(why, "overlapping segments: "+o)
	}
	return why
}
