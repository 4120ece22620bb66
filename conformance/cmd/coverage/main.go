// Command coverage writes specs/coverage.md, the table of which conformance
// specs check which catalog requirement, from the spec tree alone (ginkgo
// PreviewSpecs; no server is contacted).
//
//	go run ./conformance/cmd/coverage            # rewrite specs/coverage.md
//	go run ./conformance/cmd/coverage -check     # verify: fail if stale or if a
//	                                             # blocking requirement has neither
//	                                             # a spec nor a waiver
//
// Run it from the repository root.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"github.com/oipkit/oipkit/conformance"
)

func main() {
	out := flag.String("o", "specs/coverage.md", "output `file`")
	check := flag.Bool("check", false, "do not write; fail when the file is stale or coverage has problems")
	flag.Parse()

	cov, err := conformance.PreviewCoverage()
	if err != nil {
		fmt.Fprintf(os.Stderr, "coverage: %v\n", err)
		os.Exit(2)
	}
	var b bytes.Buffer
	if err := cov.WriteMarkdown(&b); err != nil {
		fmt.Fprintf(os.Stderr, "coverage: %v\n", err)
		os.Exit(2)
	}
	problems := cov.Problems()
	for _, p := range problems {
		fmt.Fprintf(os.Stderr, "coverage: %s\n", p)
	}
	if *check {
		old, err := os.ReadFile(*out)
		if err != nil {
			fmt.Fprintf(os.Stderr, "coverage: %v\n", err)
			os.Exit(1)
		}
		if !bytes.Equal(old, b.Bytes()) {
			fmt.Fprintf(os.Stderr, "coverage: %s is stale; run go run ./conformance/cmd/coverage and commit the result\n", *out)
			os.Exit(1)
		}
		if len(problems) > 0 {
			os.Exit(1)
		}
		fmt.Printf("coverage: %s is up to date\n", *out)
		return
	}
	if err := os.WriteFile(*out, b.Bytes(), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "coverage: %v\n", err)
		os.Exit(2)
	}
	fmt.Printf("coverage: wrote %s\n", *out)
	if len(problems) > 0 {
		os.Exit(1)
	}
}
