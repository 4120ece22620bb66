package conformance

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/oipkit/oipkit/conformance/report"
)

// JUnit XML for CI: one test case per graded requirement (its ID and
// statement), grouped in one test suite per requirement group. A failed
// requirement is a <failure>; a skipped or not-run one is <skipped>; a
// lenient or warning one passes, with its findings in <system-out> and its
// status in a property, unless the run is strict, where it is a <failure>
// too. Requirements nobody checked (not covered, not supported) are left
// out. Nothing in it names a file of the build tree.

type junitTestsuites struct {
	XMLName    xml.Name         `xml:"testsuites"`
	Name       string           `xml:"name,attr"`
	Tests      int              `xml:"tests,attr"`
	Failures   int              `xml:"failures,attr"`
	Errors     int              `xml:"errors,attr"`
	Skipped    int              `xml:"skipped,attr"`
	Time       string           `xml:"time,attr,omitempty"`
	Timestamp  string           `xml:"timestamp,attr,omitempty"`
	Properties *junitProperties `xml:"properties,omitempty"`
	Suites     []*junitSuite    `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name       string           `xml:"name,attr"`
	Classname  string           `xml:"classname,attr"`
	Properties *junitProperties `xml:"properties,omitempty"`
	Failure    *junitMessage    `xml:"failure,omitempty"`
	Skipped    *junitMessage    `xml:"skipped,omitempty"`
	SystemOut  string           `xml:"system-out,omitempty"`
}

type junitProperties struct {
	Properties []junitProperty `xml:"property"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitMessage struct {
	Message string `xml:"message,attr,omitempty"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the report as JUnit XML.
func WriteJUnit(w io.Writer, r *report.ConformanceReport) error {
	doc := &junitTestsuites{
		Name:      SuiteDescription + ": " + strings.TrimSpace(r.Implementation.Name+" "+r.Implementation.Version),
		Timestamp: r.Date.UTC().Format("2006-01-02T15:04:05"),
		Properties: &junitProperties{Properties: []junitProperty{
			{"implementation", strings.TrimSpace(r.Implementation.Name + " " + r.Implementation.Version)},
			{"suite version", r.SuiteVersion},
			{"oipkit version", r.OIPKitVersion},
			{"features", strings.Join(r.Features, ",") + " (" + r.FeatureSource + ")"},
			{"strict", fmt.Sprint(r.Strict)},
		}},
	}
	if r.Incomplete {
		doc.Properties.Properties = append(doc.Properties.Properties, junitProperty{"incomplete", r.Problem})
	}
	suites := map[string]*junitSuite{}
	for _, q := range r.Requirements {
		c, ok := junitCaseOf(q, r.Strict)
		if !ok {
			continue
		}
		group := q.ID[:strings.LastIndexByte(q.ID, '-')]
		s := suites[group]
		if s == nil {
			s = &junitSuite{Name: group}
			suites[group] = s
			doc.Suites = append(doc.Suites, s)
		}
		s.Cases = append(s.Cases, c)
		s.Tests++
		doc.Tests++
		switch {
		case c.Failure != nil:
			s.Failures++
			doc.Failures++
		case c.Skipped != nil:
			s.Skipped++
			doc.Skipped++
		}
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("encode JUnit: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// junitCaseOf is the test case of one requirement; ok is false for a
// requirement no spec checked.
func junitCaseOf(q report.RequirementResult, strict bool) (junitCase, bool) {
	c := junitCase{Name: q.ID + ": " + q.Statement, Classname: q.ID[:strings.LastIndexByte(q.ID, '-')]}
	props := []junitProperty{{"status", string(q.Status)}, {"level", q.Level}}
	if q.Binds != "" {
		props = append(props, junitProperty{"binds", q.Binds})
	}
	c.Properties = &junitProperties{Properties: props}
	switch q.Status {
	case report.StatusPassed:
	case report.StatusFailed:
		c.Failure = &junitMessage{Type: string(report.ClassFail), Message: firstFinding(q, report.ClassFail), Text: findingsText(q)}
	case report.StatusLenient, report.StatusWarning:
		if strict {
			class := report.ClassWarning
			if q.Status == report.StatusLenient {
				class = report.ClassLenient
			}
			c.Failure = &junitMessage{Type: string(class), Message: "--strict: " + firstFinding(q, class), Text: findingsText(q)}
		} else {
			c.SystemOut = findingsText(q)
		}
	case report.StatusSkipped, report.StatusNotRun:
		c.Skipped = &junitMessage{Message: string(q.Status) + ": " + q.Reason}
	case report.StatusBlocked:
		// Not graded: its cause is the failure; the evidence is kept.
		c.Skipped = &junitMessage{Message: string(q.Status) + ": " + q.Reason}
		c.SystemOut = findingsText(q)
	default:
		return c, false
	}
	return c, true
}

// firstFinding is the first line of the first finding of class c.
func firstFinding(q report.RequirementResult, c report.Class) string {
	for _, f := range q.Findings {
		if f.Class == c {
			line, _, _ := strings.Cut(f.Message, "\n")
			return line
		}
	}
	return string(q.Status)
}

// findingsText lists every finding with what was sent and what came back.
func findingsText(q report.RequirementResult) string {
	var b strings.Builder
	for _, f := range q.Findings {
		fmt.Fprintf(&b, "%s: %s\n  spec: %s\n", strings.ToUpper(string(f.Class)), f.Message, f.Spec)
		if ev := f.Evidence; ev != nil {
			fmt.Fprintf(&b, "  sent: %s %s\n", ev.Request.Method, ev.Request.Target)
			if ev.Response.Status != "" {
				fmt.Fprintf(&b, "  got:  %s %s\n", ev.Response.Status, oneLine(ev.Response.Body, 300))
			}
		}
	}
	return b.String()
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
