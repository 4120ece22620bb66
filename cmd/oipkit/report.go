package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/oipkit/oipkit/loadgen"
	"github.com/oipkit/oipkit/reports"
)

func init() {
	register(command{Name: "report", Summary: "re-render, merge and gate saved load results", Run: runReport})
}

func runReport(ctx context.Context, args []string) error {
	var thresholds multiFlag
	var format, output string
	fs := newFlagSet("report", "report [flags] RESULT.json...", `
Render a result saved by 'oipkit load --output' again, or merge several by
merging their histograms (never by averaging percentiles): runs that
overlapped in time count as parallel generators whose rates add up, others
as consecutive runs. --threshold gates the (merged) result as in 'oipkit
load', with the same exit status: 0 pass, 1 usage error or unreadable file,
3 a threshold failed, 4 an input was generator-bound, 2 an input run did
not complete.

--compare writes the results side by side as a Markdown table instead
(grouped by protocol, servers in the order of the files; no merge, no
gates), preceded by the settings the runs share.`)
	compare := fs.Bool("compare", false, "print the results side by side as a Markdown table instead of merging them")
	fs.Var(&thresholds, "threshold", "CI gate such as p99<20ms (repeatable)")
	fs.StringVar(&format, "format", "text", "stdout `format`: text, json, csv (intervals), summary-csv or hgrm")
	fs.StringVar(&output, "output", "", "write the (merged) JSON result to `file`")
	// Flags may come before or after the files.
	var files []string
	for {
		if err := parseFlags(fs, args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
			return exitError{exitUsage}
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(files) == 0 {
		return usageError("report: give at least one result file")
	}
	reporter, err := stdoutReporter(format)
	if err != nil {
		return usageError("%v", err)
	}
	var results []*loadgen.Result
	for _, path := range files {
		r, err := readResultFile(path)
		if err != nil {
			return usageError("%v", err)
		}
		results = append(results, r)
	}
	if *compare {
		if len(thresholds) > 0 || output != "" {
			return usageError("report: --compare takes neither --threshold nor --output")
		}
		seen := map[string]int{}
		for _, r := range results {
			if r.Target != nil {
				name := strings.TrimSpace(r.Target.Server.Name + " " + r.Target.Server.Version)
				if _, ok := seen[name]; !ok {
					seen[name] = len(seen)
				}
			}
		}
		order := func(server string) int {
			if i, ok := seen[server]; ok {
				return i
			}
			return len(seen)
		}
		if err := reports.WritePerformance(os.Stdout, results, order); err != nil {
			return usageError("%v", err)
		}
		return nil
	}
	res := results[0]
	if len(results) > 1 {
		if res, err = loadgen.Merge(results...); err != nil {
			return usageError("%v", err)
		}
	}
	write := func(r *loadgen.Result) error {
		if output == "" {
			return nil
		}
		return writeFile(output, loadgen.NewJSONReporter(r))
	}
	return finish(res, thresholds, format, reporter, write)
}

func readResultFile(path string) (*loadgen.Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := loadgen.ReadResult(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(r.Sources) == 0 {
		r.Sources = []string{path}
	}
	return r, nil
}
