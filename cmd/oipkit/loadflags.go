package main

import (
	"bytes"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/oipkit/oipkit/loadgen/render"
)

// flagOf names the flag of oipkit load that sets each configuration field
// the load generator's messages name. The library speaks of its own
// fields (Load.Duration, Checks.MaxErrorRate); the command speaks of its
// flags, so every message and output of load and report passes through
// flagWords on its way out.
var flagOf = map[string]string{
	"Checks.LagTolerance":           "--lag-tolerance",
	"Checks.MaxErrorRate":           "--max-error-rate",
	"Config.AbortOnFail":            "--abort-on-fail",
	"Config.Percentile":             "--percentile",
	"Config.SLO":                    "--slo",
	"Config.SLOResolution":          "--slo-resolution",
	"Config.Streaming":              "--streaming",
	"Config.Thresholds":             "--threshold",
	"Inputs.CheckEvery":             "--check-every",
	"Inputs.Data":                   "--data",
	"Inputs.File":                   "--input-data",
	"Inputs.OutputSharedMemorySize": "--output-shared-memory-size",
	"Inputs.Parameters":             "--param",
	"Inputs.Shapes":                 "--shape",
	"Inputs.SharedMemory":           "--shared-memory",
	"Inputs.Validate":               "--validate",
	"Load.Arrival":                  "--arrival",
	"Load.Concurrency":              "--concurrency",
	"Load.ConcurrencyRange":         "--concurrency-range",
	"Load.Duration":                 "--duration",
	"Load.MaxInFlight":              "--max-inflight",
	"Load.Rate":                     "--rate",
	"Load.RateRange":                "--rate-range",
	"Load.Segment":                  "--segment",
	"Load.Stability":                "--stability",
	"Load.Stability.MaxDuration":    "--max-duration",
	"Load.StartAt":                  "--start-at",
	"Sequence.Length":               "--sequence-length",
	"Sequence.Sequences":            "--num-of-sequences",
	"Streaming.Responses":           "--stream-responses",
	"Streaming.Shape":               "--stream-shape",
	"Streaming.TextInput":           "--text-input",
	"Target.GRPC":                   "--grpc",
	"Target.HTTP":                   "--http",
	"Target.Headers":                "--header",
	"Target.MetricsURL":             "--metrics-url",
	"Target.Model":                  "--model",
	"Target.Protocol":               "--protocol",
	"Target.Timeout":                "--timeout",
	"Load.Requests":                 "-n",
}

// fieldNames matches the fields of flagOf, longest first, as whole words.
var fieldNames = func() *regexp.Regexp {
	names := make([]string, 0, len(flagOf))
	for f := range flagOf {
		names = append(names, regexp.QuoteMeta(f))
	}
	slices.SortFunc(names, func(a, b string) int { return len(b) - len(a) })
	return regexp.MustCompile(`\b(` + strings.Join(names, "|") + `)\b`)
}()

// flagWords rewrites the configuration fields s names as the flags that
// set them.
func flagWords(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	return fieldNames.ReplaceAllStringFunc(s, func(f string) string { return flagOf[f] })
}

// flagWriter writes through flagWords; each Write must hold whole words,
// as one Fprintf of a line does.
type flagWriter struct{ w io.Writer }

func (f flagWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(f.w, flagWords(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// flagReporter renders rep whole, then writes it through flagWords (a
// reporter may write a field name across two writes).
func flagReporter(rep render.Reporter) render.Reporter {
	return func(w io.Writer) error {
		var b bytes.Buffer
		if err := rep(&b); err != nil {
			return err
		}
		_, err := io.WriteString(w, flagWords(b.String()))
		return err
	}
}
