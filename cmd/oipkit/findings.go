package main

import (
	"fmt"
	"io"
	"os"

	"github.com/oipkit/oipkit/conformance"
	"github.com/oipkit/oipkit/conformance/report"
)

// writeFindings is report --findings: it reads a conformance report and
// writes its findings file, one entry per distinct defect written as an
// upstream bug report, to path ("-": standard output).
func writeFindings(path string, files []string) error {
	if len(files) != 1 {
		return usageError("report --findings: give one conformance report (report.json), not %d files", len(files))
	}
	rep, err := report.ReadFile(files[0])
	if err != nil {
		return usageError("report --findings: %v", err)
	}
	write := func(w io.Writer) error { return report.WriteFindings(w, rep, conformance.Cite) }
	if path == "-" {
		return write(os.Stdout)
	}
	if err := checkWritable(path); err != nil {
		return usageError("--findings: %v", err)
	}
	if err := writeFile(path, write); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "oipkit report: %d defect(s) of %s %s in %s\n",
		len(report.Defects(rep)), rep.Implementation.Name, rep.Implementation.Version, path)
	return nil
}
