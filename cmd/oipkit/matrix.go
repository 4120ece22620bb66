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
relative to the output file.`)
	output := fs.String("o", "", "write to `file` instead of stdout")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: give at least one report.json", errUsage)
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
	for _, path := range fs.Args() {
		r, err := reports.ReadFile(path)
		if err != nil {
			return err
		}
		cols = append(cols, matrixColumn(r, path, outDir))
	}
	cite := func(id string) (reports.Citation, bool) {
		q, ok := catalog.Get(id)
		return reports.Citation{Level: string(q.Level), Statement: q.Statement, Source: q.Source}, ok
	}
	var b bytes.Buffer
	if err := reports.WriteCompatibility(&b, cols, cite); err != nil {
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
		rel, err := filepath.Rel(outDir, filepath.Join(dir, doc.file))
		if err != nil {
			rel = filepath.Join(dir, doc.file)
		}
		c.Links = append(c.Links, fmt.Sprintf("[%s](%s%s)", doc.text, filepath.ToSlash(rel), doc.anchor))
	}
	return c
}
