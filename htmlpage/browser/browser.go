// Package browser checks HTML pages in a real headless Chromium (Debian's
// chromium, installed by scripts/install-chromium.sh): that they load
// without console errors or uncaught exceptions, fetch nothing from the
// network, and draw their charts; and it takes a screenshot.
package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// ErrNoBrowser is returned when no chromium binary is found.
var ErrNoBrowser = errors.New("no chromium found (install it with scripts/install-chromium.sh, or set OIPKIT_CHROMIUM)")

// Executable returns the chromium to use: $OIPKIT_CHROMIUM, else chromium
// (or chromium-browser, google-chrome) on PATH.
func Executable() (string, error) {
	if p := os.Getenv("OIPKIT_CHROMIUM"); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoBrowser
}

// Report is what the browser saw.
type Report struct {
	Title string
	// Problems are console errors and warnings, uncaught exceptions and
	// requests for anything but the page itself (file:, data:, blob:).
	Problems []string
	// Charts is how many charts the page says it drew (data-charts).
	Charts int
	// Eval is the JSON of what Options.Eval returned.
	Eval string
}

// Options tune a check.
type Options struct {
	Width, Height int           // viewport (default 1280×900)
	Timeout       time.Duration // whole check (default 60s)
	// ViewportOnly takes the screenshot of the viewport (the top of the
	// page) instead of the full page.
	ViewportOnly bool
	// Eval is a JavaScript expression evaluated after the screenshot, to
	// check the page's behaviour (click a filter, count visible rows);
	// its value, as JSON, is Report.Eval.
	Eval string
}

// Check opens the HTML file at path, waits until the page is ready (its
// data-ready attribute, set by htmlpage's chart script, or the load event
// for pages without charts) and, if screenshot is not empty, writes a
// full-page PNG there.
func Check(ctx context.Context, path, screenshot string, o Options) (*Report, error) {
	exe, err := Executable()
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, err
	}
	if o.Width == 0 {
		o.Width, o.Height = 1280, 900
	}
	if o.Timeout == 0 {
		o.Timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	aopts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox, // root in CI containers
		chromedp.WindowSize(o.Width, o.Height),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("hide-scrollbars", true),
	)
	actx, acancel := chromedp.NewExecAllocator(ctx, aopts...)
	defer acancel()

	rep := &Report{}
	var mu sync.Mutex
	problem := func(s string) {
		mu.Lock()
		rep.Problems = append(rep.Problems, s)
		mu.Unlock()
	}
	// The listener runs in the tab's event loop: it only records.
	listen := func(ev any) {
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning || e.Type == runtime.ConsoleAPICalledTypeAssert {
				var parts []string
				for _, a := range e.Args {
					if len(a.Value) > 0 {
						parts = append(parts, string(a.Value))
					} else {
						parts = append(parts, a.Description)
					}
				}
				problem(fmt.Sprintf("console.%s: %s", e.Type, strings.Join(parts, " ")))
			}
		case *runtime.EventExceptionThrown:
			d := e.ExceptionDetails
			msg := d.Text
			if d.Exception != nil && d.Exception.Description != "" {
				msg += " " + d.Exception.Description
			}
			problem(fmt.Sprintf("uncaught exception at %d:%d: %s", d.LineNumber, d.ColumnNumber, msg))
		case *network.EventRequestWillBeSent:
			u := e.Request.URL
			if !strings.HasPrefix(u, "file:") && !strings.HasPrefix(u, "data:") && !strings.HasPrefix(u, "blob:") {
				problem("network request: " + u)
			}
		}
	}
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithListener(listen))
	defer bcancel()

	page := (&url.URL{Scheme: "file", Path: abs}).String()
	err = chromedp.Do(bctx,
		chromedp.Navigate(page),
		chromedp.Poll[chromedp.Void](`document.readyState === "complete" && (document.documentElement.dataset.ready === "1" || !document.getElementById("oipkit-charts"))`,
			chromedp.WithPollingTimeout(30*time.Second)),
	)
	if err != nil {
		return rep, fmt.Errorf("chromium on %s: %w", path, err)
	}
	if rep.Title, err = chromedp.Run(bctx, chromedp.Title()); err != nil {
		return rep, fmt.Errorf("chromium on %s: %w", path, err)
	}
	charts, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.documentElement.dataset.charts || "0"`))
	if err != nil {
		return rep, fmt.Errorf("chromium on %s: %w", path, err)
	}
	rep.Charts, _ = strconv.Atoi(charts)
	if screenshot != "" {
		shoot := chromedp.FullScreenshot(100)
		if o.ViewportOnly {
			shoot = chromedp.CaptureScreenshot()
		}
		png, err := chromedp.Run(bctx, shoot)
		if err != nil {
			return rep, fmt.Errorf("screenshot of %s: %w", path, err)
		}
		if err := os.WriteFile(screenshot, png, 0o644); err != nil {
			return rep, err
		}
	}
	if o.Eval != "" {
		v, err := chromedp.Run(bctx, chromedp.Evaluate[any](o.Eval))
		if err != nil {
			return rep, fmt.Errorf("chromium on %s: evaluate: %w", path, err)
		}
		js, err := json.Marshal(v)
		if err != nil {
			return rep, fmt.Errorf("chromium on %s: evaluate: %w", path, err)
		}
		rep.Eval = string(js)
	}
	return rep, nil
}
