package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/oipkit/oipkit/reports"
	"github.com/oipkit/oipkit/specs"
)

func init() {
	register(command{Name: "matrix", Summary: "write the compatibility matrix of several conformance reports", Run: runMatrix})
}

func runMatrix(_ context.Context, args []string) error {
	fs := newFlagSet("matrix", "matrix [-o FILE] REPORT.json...", `
Write a requirement × implementation compatibility matrix in Markdown from
conformance reports written by 'oipkit conform --report-dir': profile
verdicts, status counts, one row per requirement that any implementation
passed, failed, warned about or skipped, and for every failed requirement
the catalog's citation (level, statement, source) with what was sent and
what came back. Columns follow the order of the files.

A report in a directory of its own (reports/runtimes/mlserver/report.json)
is named after that directory when it differs from the implementation's
name, and links to the directory's report.md and README.md (its triage),
relative to the output file.

A blocked-implementation file (blocked.json, kind BlockedImplementation:
implementation, reason, commands) adds a row to a "Not run here" section
instead of a column: an implementation that cannot run where the matrix is
made, why, and the commands that grade it where it runs.`)
	output := fs.String("o", "", "write to `file` instead of stdout")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: give at least one report.json", errUsage)
	}
	if err := checkWritable(*output); err != nil {
		return fmt.Errorf("%w: -o: %v", errUsage, err)
	}
	catalog, err := specs.LoadCatalog()
	if err != nil {
		return err
	}
	outDir := "."
	if *output != "" {
		outDir = filepath.Dir(*output)
	}
	var cols []reports.MatrixColumn
	var blocked []reports.BlockedRow
	for _, path := range fs.Args() {
		if data, err := os.ReadFile(path); err == nil && reports.IsBlocked(data) {
			b, err := reports.ReadBlockedFile(path)
			if err != nil {
				return err
			}
			blocked = append(blocked, reports.BlockedRow{Blocked: b, Links: docLinks(filepath.Dir(path), outDir)})
			continue
		}
		r, err := reports.ReadFile(path)
		if err != nil {
			return fmt.Errorf("%w: %v", errUsage, err) // an unreadable input: nothing ran
		}
		cols = append(cols, matrixColumn(r, path, outDir))
	}
	if len(cols) == 0 {
		return fmt.Errorf("%w: give at least one report.json (blocked implementations only add rows)", errUsage)
	}
	cite := func(id string) (reports.Citation, bool) {
		q, ok := catalog.Get(id)
		return reports.Citation{Level: string(q.Level), Statement: q.Statement, Source: q.Source}, ok
	}
	var b bytes.Buffer
	if err := reports.WriteCompatibility(&b, cols, cite); err != nil {
		return err
	}
	if err := reports.WriteBlocked(&b, blocked); err != nil {
		return err
	}
	if *output == "" {
		_, err = os.Stdout.Write(b.Bytes())
		return err
	}
	return os.WriteFile(*output, b.Bytes(), 0o644)
}

// matrixColumn names a report's column and links its documents.
func matrixColumn(r *reports.ConformanceReport, path, outDir string) reports.MatrixColumn {
	c := reports.MatrixColumn{Report: r}
	dir := filepath.Dir(path)
	impl := strings.TrimSpace(r.Implementation.Name + " " + r.Implementation.Version)
	if base := filepath.Base(dir); base != "." && base != "/" && !strings.HasPrefix(impl, base) {
		c.Name = base + ": " + impl
	}
	for _, doc := range []struct{ file, text, anchor string }{{"report.md", "report", ""}, {"README.md", "triage", "#triage"}} {
		if _, err := os.Stat(filepath.Join(dir, doc.file)); err != nil {
			continue
		}
		c.Links = append(c.Links, docLink(dir, doc.file, doc.text, doc.anchor, outDir))
	}
	return c
}

// docLinks links a blocked implementation's README.md, if its directory has one.
func docLinks(dir, outDir string) []string {
	if _, err := os.Stat(filepath.Join(dir, "README.md")); err != nil {
		return nil
	}
	return []string{docLink(dir, "README.md", "notes", "", outDir)}
}

// docLink is a Markdown link to dir/file relative to the output file's directory.
func docLink(dir, file, text, anchor, outDir string) string {
	rel, err := filepath.Rel(outDir, filepath.Join(dir, file))
	if err != nil {
		rel = filepath.Join(dir, file)
	}
	return fmt.Sprintf("[%s](%s%s)", text, filepath.ToSlash(rel), anchor)
}
