// Package htmlpage writes self-contained HTML reports: one file holding
// its CSS, its data and its scripts, that opens offline in any browser.
//
// A [Page] is a title, a body of HTML the caller renders, and [Chart]s
// described as data; charts.js draws each chart into the element of the
// body with the chart's ID, with uPlot (MIT, vendored from npm into
// assets/uplot by scripts/vendor-uplot.sh and embedded here, licence
// included in every page). Axes know latency (milliseconds), rates, counts
// and percentile spectra (HdrHistogram's 1/(1−p) log axis).
//
// The package is shared by every HTML rendering of oipkit: load results
// (loadgen), and the conformance report and compatibility matrix. The
// pages are checked in a real headless Chromium by htmlpage/browser.
package htmlpage
