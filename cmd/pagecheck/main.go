// Command pagecheck opens HTML pages in headless Chromium and fails when a
// page logs a console error or warning, throws, fetches anything from the
// network, or draws fewer charts than it declares; with -screenshot it
// writes a full-page PNG of each. It is how `make test` and the report
// scripts check every HTML page oipkit writes.
//
//	go run ./cmd/pagecheck [-screenshot DIR] [-width 1280] [-height N] [-min-charts N] PAGE.html...
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/oipkit/oipkit/htmlpage/browser"
)

func main() {
	dir := flag.String("screenshot", "", "write PAGE.png screenshots into `dir`")
	width := flag.Int("width", 1280, "viewport `width`")
	minCharts := flag.Int("min-charts", 0, "fail when a page draws fewer than `n` charts")
	height := flag.Int("height", 0, "screenshot only the top `pixels` of the page (default: the full page)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: pagecheck [-screenshot DIR] [-width N] [-min-charts N] PAGE.html...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(1)
	}
	failed := false
	for _, page := range flag.Args() {
		shot := ""
		if *dir != "" {
			shot = filepath.Join(*dir, strings.TrimSuffix(filepath.Base(page), filepath.Ext(page))+".png")
		}
		o := browser.Options{Width: *width, Height: 900}
		if *height > 0 {
			o.Height, o.ViewportOnly = *height, true
		}
		rep, err := browser.Check(context.Background(), page, shot, o)
		if err != nil {
			fmt.Fprintf(os.Stderr, "pagecheck: %v\n", err)
			os.Exit(2)
		}
		status := "ok"
		if len(rep.Problems) > 0 || rep.Charts < *minCharts {
			status, failed = "FAIL", true
		}
		fmt.Printf("%s %s: %q, %d charts drawn", status, page, rep.Title, rep.Charts)
		if shot != "" {
			fmt.Printf(", screenshot %s", shot)
		}
		fmt.Println()
		for _, p := range rep.Problems {
			fmt.Printf("  %s\n", p)
		}
		if rep.Charts < *minCharts {
			fmt.Printf("  %d charts drawn, want at least %d\n", rep.Charts, *minCharts)
		}
	}
	if failed {
		os.Exit(3)
	}
}
