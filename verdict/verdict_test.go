package verdict

import (
	"encoding/json"
	"testing"
)

func TestExitCodes(t *testing.T) {
	for s, want := range map[Status]int{Pass: 0, NotSupported: 0, NotRun: 2, Failed: 3, Inconclusive: 4} {
		if got := s.ExitCode(); got != want {
			t.Errorf("%s.ExitCode() = %d, want %d", s, got, want)
		}
	}
}

func TestReadsOldWords(t *testing.T) {
	for in, want := range map[string]Status{`"fail"`: Failed, `"partial"`: Inconclusive, `"failed"`: Failed, `"pass"`: Pass, `"not-supported"`: NotSupported} {
		var s Status
		if err := json.Unmarshal([]byte(in), &s); err != nil || s != want {
			t.Errorf("%s: got %q, %v; want %q", in, s, err, want)
		}
	}
	var s Status
	if err := json.Unmarshal([]byte(`"passed-ish"`), &s); err == nil {
		t.Error("an unknown word was accepted")
	}
}
