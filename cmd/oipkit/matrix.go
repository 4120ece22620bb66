package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/oipkit/oipkit/conformance"
	"github.com/oipkit/oipkit/conformance/report"
)

func init() {
	register(command{Name: "matrix", Summary: "write the compatibility matrix of several conformance reports", Run: runMatrix})
}

func runMatrix(_ context.Context, args []string) error {
	fs := newFlagSet("matrix", "matrix [-o FILE] [--html FILE] REPORT.json...", `
Write a requirement × implementation compatibility matrix from conformance
reports written by 'oipkit conform --report-dir': profile verdicts, status
counts, one row per requirement that any implementation passed, failed,
warned about or skipped, and for every failed requirement the catalog's
citation (level, statement, source) with what was sent and what came back.
Columns follow the order of the files.

The Markdown document goes to -o, or to stdout when no output is named.
--html (or -o FILE.html) writes the same matrix as one self-contained HTML
page: verdicts and counts at the
top, a summary per requirement group, the colour-coded grid (every cell
also says its status in words) grouped by requirement group with a filter
for the rows that fail, need a look or differ, each failed, lenient and
warning cell linking to its evidence, folded.

A report in a directory of its own (reports/runtimes/mlserver/report.json)
is named after that directory when it differs from the implementation's
name, and links to the directory's report (report.md; report.html from the
HTML page when there is one) and README.md (its triage), relative to the
output file.

A blocked-implementation file (blocked.json, kind BlockedImplementation:
implementation, reason, commands) adds a row to a "Not run here" section
(and a column, with its reason, to the HTML page's verdicts) instead of a
column: an implementation that cannot run where the matrix is made, why,
and the commands that grade it where it runs.`)
	output := fs.String("o", "", "write to `file` instead of stdout (HTML when it ends in .html)")
	htmlOut := fs.String("html", "", "also write the matrix as an HTML page to `file`")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: give at least one report.json", errUsage)
	}
	mdOut := *output
	if isHTMLPath(*output) {
		if *htmlOut != "" && *htmlOut != *output {
			return fmt.Errorf("%w: -o %s is an HTML file and --html names another: give one", errUsage, *output)
		}
		mdOut, *htmlOut = "", *output
	}
	for _, out := range []struct{ flag, path string }{{"-o", mdOut}, {"--html", *htmlOut}} {
		if err := checkWritable(out.path); err != nil {
			return fmt.Errorf("%w: %s: %v", errUsage, out.flag, err)
		}
	}
	type input struct {
		path    string
		report  *report.ConformanceReport
		blocked *report.Blocked
	}
	var inputs []input
	nReports := 0
	for _, path := range fs.Args() {
		if data, err := os.ReadFile(path); err == nil && report.IsBlocked(data) {
			b, err := report.ReadBlockedFile(path)
			if err != nil {
				return err
			}
			inputs = append(inputs, input{path: path, blocked: b})
			continue
		}
		r, err := report.ReadFile(path)
		if err != nil {
			return fmt.Errorf("%w: %v", errUsage, err) // an unreadable input: nothing ran
		}
		inputs = append(inputs, input{path: path, report: r})
		nReports++
	}
	if nReports == 0 {
		return fmt.Errorf("%w: give at least one report.json (blocked implementations only add rows)", errUsage)
	}
	// columns lays the inputs out for an output file in outDir, linking
	// the documents relative to it.
	columns := func(outDir string, html bool) (cols []report.MatrixColumn, blocked []report.BlockedRow) {
		for _, in := range inputs {
			if in.blocked != nil {
				blocked = append(blocked, report.BlockedRow{Blocked: in.blocked, Links: docLinks(filepath.Dir(in.path), outDir)})
				continue
			}
			cols = append(cols, matrixColumn(in.report, in.path, outDir, html))
		}
		return cols, blocked
	}

	if *htmlOut != "" {
		cols, blocked := columns(filepath.Dir(*htmlOut), true)
		var b bytes.Buffer
		if err := report.WriteCompatibilityHTML(&b, cols, blocked, conformance.Cite); err != nil {
			return err
		}
		if err := os.WriteFile(*htmlOut, b.Bytes(), 0o644); err != nil {
			return err
		}
		if mdOut == "" {
			return nil // the page only
		}
	}
	outDir := "."
	if mdOut != "" {
		outDir = filepath.Dir(mdOut)
	}
	cols, blocked := columns(outDir, false)
	var b bytes.Buffer
	if err := report.WriteCompatibility(&b, cols, conformance.Cite); err != nil {
		return err
	}
	if err := report.WriteBlocked(&b, blocked); err != nil {
		return err
	}
	if mdOut == "" {
		_, err := os.Stdout.Write(b.Bytes())
		return err
	}
	return os.WriteFile(mdOut, b.Bytes(), 0o644)
}

func isHTMLPath(p string) bool {
	ext := strings.ToLower(filepath.Ext(p))
	return ext == ".html" || ext == ".htm"
}

// matrixColumn names a report's column and links its documents: the
// report (report.html for an HTML page when there is one, else report.md)
// and its triage (README.md).
func matrixColumn(r *report.ConformanceReport, path, outDir string, html bool) report.MatrixColumn {
	c := report.MatrixColumn{Report: r}
	dir := filepath.Dir(path)
	impl := strings.TrimSpace(r.Implementation.Name + " " + r.Implementation.Version)
	if base := filepath.Base(dir); base != "." && base != "/" && !strings.HasPrefix(impl, base) {
		c.Name = base + ": " + impl
	}
	report := "report.md"
	if _, err := os.Stat(filepath.Join(dir, "report.html")); err == nil && html {
		report = "report.html"
	}
	for _, doc := range []struct{ file, text, anchor string }{{report, "report", ""}, {"README.md", "triage", "#triage"}} {
		if _, err := os.Stat(filepath.Join(dir, doc.file)); err != nil {
			continue
		}
		c.Links = append(c.Links, docLink(dir, doc.file, doc.text, doc.anchor, outDir))
	}
	return c
}

// docLinks links a blocked implementation's README.md, if its directory has one.
func docLinks(dir, outDir string) []report.DocLink {
	if _, err := os.Stat(filepath.Join(dir, "README.md")); err != nil {
		return nil
	}
	return []report.DocLink{docLink(dir, "README.md", "notes", "", outDir)}
}

// docLink links dir/file relative to the output file's directory.
func docLink(dir, file, text, anchor, outDir string) report.DocLink {
	rel, err := filepath.Rel(outDir, filepath.Join(dir, file))
	if err != nil {
		rel = filepath.Join(dir, file)
	}
	return report.DocLink{Text: text, Href: filepath.ToSlash(rel) + anchor}
}
