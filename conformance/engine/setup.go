package engine

import (
	"net/http"

	"google.golang.org/protobuf/proto"

	"github.com/oipkit/oipkit/conformance/report"
)

// replayStep is state the running spec made that a later request relies
// on: its reproducer makes it first ([report.WithSetup]).
type replayStep struct {
	origin  Evidencer     // the request that made it; nil when the suite made it
	prepare func() string // evaluated when a finding is recorded
	remove  string
}

// ReplaySetup makes the reproducer of each finding the running spec
// records after it start by running what prepare returns and end by running
// remove, both quietly: a request that names state made earlier in the
// spec (a shared memory region) shows nothing pasted alone. prepare is
// called when a finding is recorded, so it can show the state as it is
// then; nil makes nothing (a step that only puts something back). origin
// is the request that made the state, or nil: a finding on origin itself
// replays it without this step.
func ReplaySetup(origin Evidencer, prepare func() string, remove string) {
	specState.Lock()
	defer specState.Unlock()
	specState.setup = append(specState.setup, replayStep{origin: requestOf(origin), prepare: prepare, remove: remove})
}

// Reproducer is the shell command that sends ev's request again, without
// the running spec's setup: for a setup step that sends a request.
func Reproducer(ev Evidencer) string { return requestReproducer(ev) }

// setupFor is the running spec's setup for a finding on ev.
func setupFor(ev Evidencer) []report.SetupStep {
	specState.Lock()
	steps := append([]replayStep(nil), specState.setup...)
	specState.Unlock()
	self := requestOf(ev)
	var out []report.SetupStep
	for _, s := range steps {
		if s.origin != nil && s.origin == self {
			continue
		}
		step := report.SetupStep{Remove: s.remove}
		if s.prepare != nil {
			step.Make = s.prepare()
		}
		out = append(out, step)
	}
	return out
}

// requestOf is the request ev derives from: the exchange under a decoded
// answer.
func requestOf(ev Evidencer) Evidencer {
	switch v := ev.(type) {
	case *Object:
		if v != nil {
			return v.Ex
		}
	case *InferResponse:
		if v != nil {
			return v.Ex
		}
	}
	return ev
}

// UnsentRequest is the REST request [Do] sends for these arguments, not
// sent: for a reproducer step whose request the spec sends later (a
// clean-up) or not at all.
func UnsentRequest(method, path string, header http.Header, body []byte) *Exchange {
	return &Exchange{Method: method, Path: path, ReqHeader: header, ReqBody: body}
}

// UnsentCall is the RPC [Invoke] makes for name and req, not made: for a
// reproducer step.
func UnsentCall(name string, req proto.Message) *Call {
	return &Call{Method: methodPrefix + name, Req: req}
}
