package conformance

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
)

// progress tells a quiet run's reader how far the specs are: a line when
// they start, a count kept up to date in place on a terminal, and a line
// when they end. ginkgo's own stream is for --verbose.
var progress struct {
	sync.Mutex
	w             io.Writer // nil: no progress
	tty           bool
	start         time.Time
	total, done   int
	failed, skips int
}

// startProgress makes w (nil: none) receive the progress of the run.
func startProgress(w io.Writer) {
	progress.Lock()
	defer progress.Unlock()
	progress.w = w
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			progress.tty = true
		}
	}
}

var _ = ReportBeforeSuite(func(r Report) {
	progress.Lock()
	defer progress.Unlock()
	progress.start, progress.total = time.Now(), r.PreRunStats.SpecsThatWillRun
	if progress.w != nil {
		fmt.Fprintf(progress.w, "running %d specs\n", progress.total)
	}
})

var _ = ReportAfterEach(func(sr SpecReport) {
	// ReportAfterEach sees the specs the label filter left out too, as
	// skipped without a reason.
	if sr.LeafNodeType != types.NodeTypeIt || sr.State == types.SpecStateSkipped && sr.Failure.Message == "" {
		return
	}
	progress.Lock()
	defer progress.Unlock()
	progress.done++
	switch {
	case sr.State.Is(types.SpecStateFailureStates):
		progress.failed++
	case sr.State == types.SpecStateSkipped:
		progress.skips++
	}
	if progress.w != nil && progress.tty {
		fmt.Fprintf(progress.w, "\r%d/%d specs, %d failed, %d skipped", progress.done, progress.total, progress.failed, progress.skips)
	}
})

// endProgress writes the line that ends the progress.
func endProgress() {
	progress.Lock()
	defer progress.Unlock()
	if progress.w == nil {
		return
	}
	if progress.tty {
		fmt.Fprint(progress.w, "\r\033[K")
	}
	fmt.Fprintf(progress.w, "ran %d of %d specs in %s: %d failed, %d skipped\n", progress.done, progress.total,
		time.Since(progress.start).Round(100*time.Millisecond), progress.failed, progress.skips)
}
