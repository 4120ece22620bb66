package selftest

import (
	"encoding/xml"
	"io"
	"os"
	"strings"
	"testing"
)

// junitCase is what the selftests read of a JUnit test case.
type junitCase struct {
	Name      string `xml:"name,attr"`
	Classname string `xml:"classname,attr"`
	Failure   *struct {
		Type    string `xml:"type,attr"`
		Message string `xml:"message,attr"`
	} `xml:"failure"`
	Skipped   *struct{} `xml:"skipped"`
	SystemOut string    `xml:"system-out"`
}

// readJUnit parses a JUnit file with encoding/xml and returns its test
// cases by requirement ID. It fails the test on a malformed file, on two
// cases for one requirement, and on anything that names a file of the
// build tree.
func readJUnit(t *testing.T, path string) map[string]junitCase {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{".go:", "/selftest/", "/conformance/"} {
		if strings.Contains(string(b), leak) {
			t.Errorf("%s names a file of the build tree (%q)", path, leak)
		}
	}
	var doc struct {
		Tests  int `xml:"tests,attr"`
		Suites []struct {
			Cases []junitCase `xml:"testcase"`
		} `xml:"testsuite"`
	}
	dec := xml.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("%s does not parse: %v", path, err)
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if cd, ok := tok.(xml.CharData); err != nil || !ok || strings.TrimSpace(string(cd)) != "" {
			t.Errorf("%s has data after the document", path)
			break
		}
	}
	out := map[string]junitCase{}
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			id, _, _ := strings.Cut(c.Name, ": ")
			if _, dup := out[id]; dup {
				t.Errorf("%s: two test cases for %s", path, id)
			}
			out[id] = c
		}
	}
	if len(out) != doc.Tests {
		t.Errorf("%s: tests=%d but %d test cases", path, doc.Tests, len(out))
	}
	return out
}
