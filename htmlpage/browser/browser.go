// Package browser checks HTML pages in a real headless Chromium (Debian's
// chromium, installed by scripts/install-chromium.sh): that they load
// without console errors or uncaught exceptions, fetch nothing from the
// network, and draw their charts; and it takes a screenshot. It drives
// chromium over the DevTools protocol on a pipe (cdp.go), with the
// standard library alone.
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
	profile, err := os.MkdirTemp("", "oipkit-chromium-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(profile)

	rep := &Report{}
	var mu sync.Mutex
	problem := func(s string) {
		mu.Lock()
		rep.Problems = append(rep.Problems, s)
		mu.Unlock()
	}
	// The events arrive on the pipe's read loop: the listener only records.
	listen := func(method string, params json.RawMessage) {
		switch method {
		case "Runtime.consoleAPICalled":
			var e struct {
				Type string `json:"type"`
				Args []struct {
					Value       json.RawMessage `json:"value"`
					Description string          `json:"description"`
				} `json:"args"`
			}
			if json.Unmarshal(params, &e) != nil {
				return
			}
			if e.Type == "error" || e.Type == "warning" || e.Type == "assert" {
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
		case "Runtime.exceptionThrown":
			var e struct {
				Details struct {
					Text         string `json:"text"`
					LineNumber   int    `json:"lineNumber"`
					ColumnNumber int    `json:"columnNumber"`
					Exception    *struct {
						Description string `json:"description"`
					} `json:"exception"`
				} `json:"exceptionDetails"`
			}
			if json.Unmarshal(params, &e) != nil {
				return
			}
			d := e.Details
			msg := d.Text
			if d.Exception != nil && d.Exception.Description != "" {
				msg += " " + d.Exception.Description
			}
			problem(fmt.Sprintf("uncaught exception at %d:%d: %s", d.LineNumber, d.ColumnNumber, msg))
		case "Network.requestWillBeSent":
			var e struct {
				Request struct {
					URL string `json:"url"`
				} `json:"request"`
			}
			if json.Unmarshal(params, &e) != nil {
				return
			}
			u := e.Request.URL
			if !strings.HasPrefix(u, "file:") && !strings.HasPrefix(u, "data:") && !strings.HasPrefix(u, "blob:") {
				problem("network request: " + u)
			}
		}
	}
	b, err := startDevtools(exe, chromiumFlags(profile, o.Width, o.Height), listen)
	if err != nil {
		return nil, err
	}
	defer b.close(ctx)
	if err := inspect(ctx, b, abs, screenshot, o, rep); err != nil {
		return rep, fmt.Errorf("chromium on %s: %w", path, err)
	}
	return rep, nil
}

// chromiumFlags are a headless chromium's, after Puppeteer's defaults: no
// first-run, sync, extension, update or other background traffic (this
// machine's network is closed, and a page check must see only the page's
// own requests), no sandbox (root in CI containers), a fresh profile.
func chromiumFlags(profile string, width, height int) []string {
	return []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--mute-audio",
		"--no-first-run", "--no-default-browser-check", "--disable-background-networking",
		"--disable-background-timer-throttling", "--disable-backgrounding-occluded-windows",
		"--disable-breakpad", "--disable-client-side-phishing-detection", "--disable-component-update",
		"--disable-default-apps", "--disable-dev-shm-usage", "--disable-extensions",
		"--disable-features=Translate", "--disable-hang-monitor", "--disable-ipc-flooding-protection",
		"--disable-popup-blocking", "--disable-prompt-on-repost", "--disable-renderer-backgrounding",
		"--disable-sync", "--disable-quic", "--force-color-profile=srgb", "--metrics-recording-only",
		"--password-store=basic", "--use-mock-keychain",
		"--user-data-dir=" + profile, fmt.Sprintf("--window-size=%d,%d", width, height),
		"about:blank",
	}
}

// inspect opens the page in a new tab of b, waits until it is ready and
// fills rep.
func inspect(ctx context.Context, b *devtools, abs, screenshot string, o Options, rep *Report) error {
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := b.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		return err
	}
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached); err != nil {
		return err
	}
	s := attached.SessionID
	for _, domain := range []string{"Runtime", "Network", "Page"} {
		if err := b.call(ctx, s, domain+".enable", struct{}{}, nil); err != nil {
			return err
		}
	}
	page := (&url.URL{Scheme: "file", Path: abs}).String()
	if err := b.call(ctx, s, "Page.navigate", map[string]any{"url": page}, nil); err != nil {
		return err
	}
	if err := poll(ctx, b, s, `document.readyState === "complete" && (document.documentElement.dataset.ready === "1" || !document.getElementById("oipkit-charts"))`, 30*time.Second); err != nil {
		return err
	}
	if err := evaluate(ctx, b, s, `document.title`, &rep.Title); err != nil {
		return err
	}
	var charts string
	if err := evaluate(ctx, b, s, `document.documentElement.dataset.charts || "0"`, &charts); err != nil {
		return err
	}
	rep.Charts, _ = strconv.Atoi(charts)
	if screenshot != "" {
		params := map[string]any{"format": "png", "fromSurface": true}
		if !o.ViewportOnly {
			params["captureBeyondViewport"] = true
		}
		var shot struct {
			Data []byte `json:"data"` // base64 in JSON
		}
		if err := b.call(ctx, s, "Page.captureScreenshot", params, &shot); err != nil {
			return fmt.Errorf("screenshot: %w", err)
		}
		if err := os.WriteFile(screenshot, shot.Data, 0o644); err != nil {
			return err
		}
	}
	if o.Eval != "" {
		var v any
		if err := evaluate(ctx, b, s, o.Eval, &v); err != nil {
			return fmt.Errorf("evaluate: %w", err)
		}
		js, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("evaluate: %w", err)
		}
		rep.Eval = string(js)
	}
	return nil
}

// evaluate runs the JavaScript expression in session s and decodes its
// value into v; an exception is an error.
func evaluate(ctx context.Context, b *devtools, s, expr string, v any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
			Type  string          `json:"type"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception *struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := b.call(ctx, s, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &r); err != nil {
		return err
	}
	if e := r.ExceptionDetails; e != nil {
		msg := e.Text
		if e.Exception != nil {
			msg += " " + e.Exception.Description
		}
		return fmt.Errorf("%s: %s", expr, msg)
	}
	if len(r.Result.Value) == 0 {
		r.Result.Value = []byte("null") // undefined
	}
	return json.Unmarshal(r.Result.Value, v)
}

// poll evaluates cond every 50 ms until it is true, for at most limit.
func poll(ctx context.Context, b *devtools, s, cond string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		var ok bool
		if err := evaluate(ctx, b, s, cond, &ok); err != nil {
			return fmt.Errorf("waiting for the page: %w", err)
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the page was not ready within %v", limit)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
