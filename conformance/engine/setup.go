package engine

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

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

// PutBack sends req, a request built unsent that puts back what the
// running spec changed (a setting, a model it unloaded, a region it
// registered), when the spec ends, and after the request of every finding
// the spec records from now on: pasted, a reproducer too leaves the server
// as it found it.
func PutBack(req Evidencer) {
	ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) { Send(ctx, req) })
	ReplaySetup(nil, nil, Reproducer(req))
}

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

// Send sends req, a request built unsent ([UnsentRequest], [UnsentCall]),
// as [Do] or [Invoke] would, and returns what was sent and came back.
func Send(ctx context.Context, req Evidencer) Evidencer {
	switch v := req.(type) {
	case *Exchange:
		return Do(ctx, v.Method, v.Path, v.ReqHeader, v.ReqBody)
	case *Call:
		c := &Call{Method: v.Method, Req: v.Req}
		if resp, err := responseOf(v.Method); err != nil {
			c.Err = err
		} else {
			c = current.call(ctx, v.Method, v.Req, resp)
		}
		sent(c)
		current.specGate(c.Err, v.Method, true)
		return c
	}
	panic(fmt.Sprintf("conformance: Send cannot send a %T", req))
}

// responseOf is a new, empty response message of the RPC method
// ("/package.Service/Method"), as its registered descriptor gives it.
func responseOf(method string) (proto.Message, error) {
	service, name, ok := strings.Cut(strings.TrimPrefix(method, "/"), "/")
	if ok {
		if d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(service)); err == nil {
			if sd, isService := d.(protoreflect.ServiceDescriptor); isService {
				if md := sd.Methods().ByName(protoreflect.Name(name)); md != nil {
					if mt, err := protoregistry.GlobalTypes.FindMessageByName(md.Output().FullName()); err == nil {
						return mt.New().Interface(), nil
					}
				}
			}
		}
	}
	return nil, fmt.Errorf("conformance: no registered RPC %s", method)
}
