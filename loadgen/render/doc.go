// Package render turns load-generator Results into what people read: the
// text summary, interval and summary CSV, the HdrHistogram .hgrm spectrum,
// the JSON record, a self-contained HTML page with plots (its template in
// report.html.tmpl, embedded), an overlay of several results on one page,
// and a Markdown comparison table. Every rendering is a pure function of
// the Result(s): rendering a result saved as JSON (oipkit load's output
// file) again gives the same bytes.
//
// [Formats] lists the named renderings of one result, defined here only;
// [FormatNamed] finds one. [NewComparisonHTMLReporter] overlays several
// results without merging them, [WriteComparison] tabulates them by
// protocol and server. Messages inside a Result name the engine's
// configuration fields; a command that prints them may translate those to
// its flags (oipkit does).
package render
