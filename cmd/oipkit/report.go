package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/oipkit/oipkit/loadgen"
	"github.com/oipkit/oipkit/loadgen/merge"
	"github.com/oipkit/oipkit/loadgen/render"
	"github.com/oipkit/oipkit/verdict"
)

func init() {
	register(command{Name: "report", Summary: "re-render, merge, compare and gate saved load results", Run: runReport})
}

// reportDoc is report's help text.
const reportDoc = `
Render a result saved by 'oipkit load --output' again, or merge several by
merging their histograms (never by averaging percentiles): runs that
overlapped in time count as parallel generators whose rates add up, others
as consecutive runs. Runs of different configurations (model, protocol,
server, load, inputs, timeout) are not merged unless --force is given; the
merged result then says what differed. A folder stands for every *.json in
it.

Segments of a split test ('oipkit load --segment I/N') merge into the whole
test's result: histograms added, counts summed, the per-interval series
aligned by wall-clock interval. Segments of different tests or runs, and
segments that overlap (the same segment twice, different splits), are
refused unless --force is given. A merge missing a segment, or with one
that did not complete, is incomplete: exit status 4, whatever the
thresholds say.

--html FILE writes an HTML page: one result's report (the merged one, for
segments), or several results overlaid for comparison (one series each: percentile spectra, p99 over time,
sweep curves), without merging them. --compare prints several results side
by side as a Markdown table instead (grouped by protocol, servers in the
order of the files). Neither merges nor gates.

--findings FILE reads one conformance report (report.json of 'oipkit
conform') instead and writes its findings file: one entry per distinct
defect (the checks that failed on one exchange, the same request and
answer), each written as an upstream bug report: title, the requirements'
statements and sources quoted from the catalog, a reproducer (curl, or
grpcurl with specs/proto), expected, observed, the affected requirement
IDs and the runtime's version. "-" writes it to standard output.

--threshold gates the (merged) result as in 'oipkit load', with the default
bound on failed requests (--max-error-rate, 1%). Exit status: 0 pass; 1 usage
error or unreadable file; 2 an input run did not complete; 3 a threshold
failed; 4 inconclusive (an input was generator-bound or unstable, or
segments are missing).`

func runReport(ctx context.Context, args []string) error {
	var thresholds multiFlag
	var format, output, html, maxErrorRate string
	fs := newFlagSet("report", "report [flags] (RESULT.json | DIR)...", reportDoc)
	compare := fs.Bool("compare", false, "print the results side by side as a Markdown table instead of merging them")
	force := fs.Bool("force", false, "merge results even when their configurations differ")
	fs.Var(&thresholds, "threshold", "CI gate such as p99<20ms (repeatable)")
	fs.StringVar(&maxErrorRate, "max-error-rate", "", "bound on failed requests, a `fraction` or percentage (default: the run's, else 1%)")
	fs.StringVar(&format, "format", "text", "stdout `format`: "+render.FormatNames())
	fs.StringVar(&output, "output", "", "write the (merged) JSON result to `file`")
	fs.StringVar(&html, "html", "", "write an HTML report to `file` (several results: overlaid, not merged)")
	findings := fs.String("findings", "", "read a conformance report.json instead and write its findings file (one entry per distinct defect) to `file`")
	// Flags may come before or after the files.
	var files []string
	for {
		if err := parseFlags(fs, args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
			return exitError{verdict.ExitUsage}
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if *findings != "" {
		return writeFindings(*findings, files)
	}
	if len(files) == 0 {
		return usageError("report: give at least one result file or folder")
	}
	files, err := expandFolders(files)
	if err != nil {
		return err
	}
	f, err := render.FormatNamed(format)
	if err != nil {
		return usageError("--format: %v", err)
	}
	for _, o := range []struct{ flag, path string }{{"--output", output}, {"--html", html}} {
		if err := checkWritable(o.path); err != nil {
			return usageError("%s: %v", o.flag, err)
		}
	}
	var results []*loadgen.Result
	for _, path := range files {
		r, err := readResultFile(path)
		if err != nil {
			return usageError("%v", err)
		}
		results = append(results, r)
	}
	if maxErrorRate != "" {
		v, err := parseFraction("--max-error-rate", maxErrorRate)
		if err != nil {
			return usageError("%v", err)
		}
		for _, r := range results {
			r.Config.Checks.MaxErrorRate = &v
		}
	}

	segmented := false
	for _, r := range results {
		segmented = segmented || r.Config.Load.Segment != nil
	}
	// Several plain results with --html are overlaid; the segments of a
	// test are merged into one result first.
	if *compare || (html != "" && len(results) > 1 && !segmented) {
		if len(thresholds) > 0 || output != "" {
			return usageError("report: comparing results (--compare, or --html with several files) takes neither --threshold nor --output")
		}
		if html != "" {
			if err := writeFile(html, flagReporter(render.NewComparisonHTMLReporter(results, comparisonLabels(results, files)))); err != nil {
				return usageError("%v", err)
			}
			fmt.Fprintf(os.Stderr, "oipkit report: %d results overlaid in %s\n", len(results), html)
		}
		if err := render.WriteComparison(os.Stdout, results, serverLabels(results, files)); err != nil {
			return usageError("%v", err)
		}
		return nil
	}

	res, err := mergeResults(results, files, segmented, *force)
	if err != nil {
		return err
	}
	write := func(r *loadgen.Result) error {
		if output != "" {
			if err := writeFile(output, flagReporter(render.NewJSONReporter(r))); err != nil {
				return err
			}
		}
		if html != "" {
			return writeFile(html, flagReporter(render.NewHTMLReporter(r)))
		}
		return nil
	}
	gates, err := loadgen.ParseThresholds(thresholds)
	if err != nil {
		return usageError("%v", err)
	}
	return finish(res, gates, f, write)
}

// mergeResults merges the results read from files into one: the segments
// of a split test, or runs of one configuration (any with --force). One
// result is itself. A merge refused is a usage error.
func mergeResults(results []*loadgen.Result, files []string, segmented, force bool) (*loadgen.Result, error) {
	if segmented {
		if problems := merge.CheckSegments(results); len(problems) > 0 {
			if !force {
				return nil, usageError("report: refusing to merge: %s; --force merges anyway (the result then records the problems)", strings.Join(problems, "; "))
			}
			fmt.Fprintf(os.Stderr, "oipkit report: merging despite: %s\n", strings.Join(problems, "; "))
		}
	} else if len(results) == 1 {
		return results[0], nil
	} else {
		var differ []string
		for i, r := range results[1:] {
			for _, d := range loadgen.Differences(results[0], r) {
				differ = append(differ, fmt.Sprintf("%s: %s", files[i+1], d))
			}
		}
		if len(differ) > 0 && !force {
			return nil, usageError("report: refusing to merge results of different configurations (first file %s): %s; use --compare or --html to compare them, --force to merge anyway",
				files[0], strings.Join(differ, "; "))
		}
	}
	res, err := merge.Merge(results...)
	if err != nil {
		return nil, usageError("%v", err)
	}
	return res, nil
}

// comparisonLabels names each result for an overlay, adding its file
// (folder and name, e.g. pytriton/load-grpc.json) where two results would
// share a label or the result names no server.
func comparisonLabels(results []*loadgen.Result, files []string) []string {
	labels := make([]string, len(results))
	count := map[string]int{}
	for i, r := range results {
		labels[i] = render.Label(r)
		count[labels[i]]++
	}
	for i, r := range results {
		if count[labels[i]] > 1 || r.Target == nil || r.Target.Server.Name == "" {
			labels[i] += " (" + filepath.Join(filepath.Base(filepath.Dir(files[i])), filepath.Base(files[i])) + ")"
		}
	}
	return labels
}

// serverLabels names each result's server for the comparison table: its
// name and version, followed by its folder (interop keeps one folder per
// set-up, e.g. pytriton/ and triton/ both serve "triton 2.51.0") where one
// server name comes from several folders or the result names no server.
func serverLabels(results []*loadgen.Result, files []string) []string {
	labels := make([]string, len(results))
	folders := map[string]map[string]bool{}
	for i, r := range results {
		labels[i] = render.ServerName(r)
		if folders[labels[i]] == nil {
			folders[labels[i]] = map[string]bool{}
		}
		folders[labels[i]][filepath.Dir(files[i])] = true
	}
	for i := range labels {
		if labels[i] == "unknown server" || len(folders[labels[i]]) > 1 {
			labels[i] += " (" + filepath.Base(filepath.Dir(files[i])) + ")"
		}
	}
	return labels
}

func readResultFile(path string) (*loadgen.Result, error) {
	r, err := loadgen.ReadResultFile(path)
	if err != nil {
		return nil, err
	}
	if len(r.Sources) == 0 {
		r.Sources = []string{path}
	}
	return r, nil
}

// expandFolders replaces every folder among paths by the *.json files in
// it (not its sub-folders), in name order. A folder without any is an
// error with exit status 2: in a distributed test it means no segment left
// a result.
func expandFolders(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil || !st.IsDir() {
			out = append(out, p) // a file, or an error reading it later
			continue
		}
		found, err := filepath.Glob(filepath.Join(p, "*.json"))
		if err != nil {
			return nil, usageError("report: %v", err)
		}
		var files []string
		for _, f := range found {
			if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() {
				files = append(files, f)
			}
		}
		if len(files) == 0 {
			fmt.Fprintf(os.Stderr, "oipkit report: %s holds no load results (*.json): nothing ran, or no segment of the test finished\n", p)
			return nil, exitError{verdict.ExitNotRun}
		}
		out = append(out, files...)
	}
	return out, nil
}
