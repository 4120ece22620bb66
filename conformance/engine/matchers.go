package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega/types"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/oipkit/oipkit/tensor"
)

// The OIP matchers. Each is a gomega matcher over an [*Exchange] or a
// [*Call] (some also over the views taken from them: [*InferResponse],
// [*Object], a gRPC response message), whose failure message says what was
// sent, what came back and what was wanted. A matcher may also say how its
// failure is graded whatever the requirement (a 5xx is a server fault; an
// accepted bad request is a negative result, lenient when the rule binds
// clients); everything else is graded by the requirement's catalog class.
//
// Matchers keep the failure they found, so each use needs a new one: call
// the constructor in the Verify.

// gradedMatcher is a matcher that says how its last failure is graded.
type gradedMatcher interface{ grading() grading }

// failure is the error a check returns when how it is graded matters.
type failure struct {
	msg string
	g   grading
}

func (f *failure) Error() string { return f.msg }

// accepted is the failure of a negative check: the server accepted a
// request it should have refused.
func accepted(format string, args ...any) error {
	return &failure{msg: fmt.Sprintf(format, args...), g: grading{negative: true}}
}

// serverFault is a failure graded fail whatever the requirement.
func serverFault(why, format string, args ...any) error {
	return &failure{msg: fmt.Sprintf(format, args...), g: grading{hard: why, answer: true}}
}

// failedAnswer is the failure of a check whose answer as a whole is not
// the one required (an error status where success was required, a body
// that is not an answer at all): every other check of that answer fails
// with it, and the report grades them under one cause (report.Block).
func failedAnswer(format string, args ...any) error {
	return &failure{msg: fmt.Sprintf(format, args...), g: grading{answer: true}}
}

// unusable is the failure of a check that got no usable answer.
func unusable(format string, args ...any) error {
	return &failure{msg: fmt.Sprintf(format, args...), g: grading{noAnswer: true}}
}

// matcher is a gomega matcher built from a check function.
type matcher struct {
	what  string // what a match means, for negated messages
	check func(actual any) error
	err   error
}

func newMatcher(what string, check func(actual any) error) *matcher {
	return &matcher{what: what, check: check}
}

func (m *matcher) Match(actual any) (bool, error) {
	m.err = m.check(actual)
	return m.err == nil, nil
}

// FailureMessage explains the last Match; a matcher that has not matched
// anything yet (a misuse) says so rather than panicking mid-suite.
func (m *matcher) FailureMessage(actual any) string {
	if m.err == nil {
		return fmt.Sprintf("%s did not %s", gotOf(actual), m.what)
	}
	return m.err.Error()
}

func (m *matcher) NegatedFailureMessage(actual any) string {
	return fmt.Sprintf("%s, want it not to %s", gotOf(actual), m.what)
}

func (m *matcher) grading() grading {
	var f *failure
	if errors.As(m.err, &f) {
		return f.g
	}
	return grading{}
}

// PassCheck is a matcher from a check function over a view of actual (not
// gomega's Satisfy, whose function returns a bool and no reason): fn's
// parameter type says which (*Exchange, *InferResponse, *Object, *Call, or
// a gRPC response message such as *pb.ModelInferResponse). A nil error is a
// match; the error is the failure message.
func PassCheck[T any](fn func(T) error) types.GomegaMatcher {
	return newMatcher("pass the check", func(actual any) error {
		v, err := view[T](actual)
		if err != nil {
			return err
		}
		return fn(v)
	})
}

// view converts actual to the view T a check needs.
func view[T any](actual any) (T, error) {
	var zero T
	var v any
	var err error
	switch any(zero).(type) {
	case *Exchange:
		v, err = exchangeOf(actual)
	case *InferResponse:
		v, err = inferOf(actual)
	case *Object:
		v, err = objectOf(actual)
	case *Call:
		v, err = callOf(actual)
	default:
		if x, ok := actual.(T); ok {
			return x, nil
		}
		c, ok := actual.(*Call)
		if !ok {
			return zero, fmt.Errorf("conformance suite bug: cannot check a %T as a %T", actual, zero)
		}
		if err := okCall(c); err != nil {
			return zero, err
		}
		x, ok := c.Resp.(T)
		if !ok {
			return zero, fmt.Errorf("conformance suite bug: %s answered a %T, not a %T", c.Name(), c.Resp, zero)
		}
		return x, nil
	}
	if err != nil {
		return zero, err
	}
	return v.(T), nil
}

func exchangeOf(actual any) (*Exchange, error) {
	switch v := actual.(type) {
	case *Exchange:
		return v, nil
	case *InferResponse:
		return v.Ex, nil
	case *Object:
		return v.Ex, nil
	}
	return nil, fmt.Errorf("conformance suite bug: %T is not an HTTP exchange", actual)
}

func inferOf(actual any) (*InferResponse, error) {
	if r, ok := actual.(*InferResponse); ok {
		return r, nil
	}
	e, err := exchangeOf(actual)
	if err != nil {
		return nil, err
	}
	return e.AsInferResponse()
}

func objectOf(actual any) (*Object, error) {
	if o, ok := actual.(*Object); ok {
		return o, nil
	}
	e, err := exchangeOf(actual)
	if err != nil {
		return nil, err
	}
	return e.AsObject()
}

func callOf(actual any) (*Call, error) {
	if c, ok := actual.(*Call); ok {
		return c, nil
	}
	return nil, fmt.Errorf("conformance suite bug: %T is not an RPC", actual)
}

// okCall is nil when the call succeeded; a status the client made up
// because the answer could not be read is no usable answer.
func okCall(c *Call) error {
	switch {
	case c.Err == nil:
		return nil
	case GRPCNoAnswer(c.Err) != nil || ClientSide(c.Err):
		return unusable("%s: no usable answer: %s, want OK", c.Name(), c.Got())
	}
	return failedAnswer("%s: %s, want OK", c.Name(), c.Got())
}

// gotOf summarizes actual for a message.
func gotOf(actual any) string {
	switch v := actual.(type) {
	case *Exchange:
		return v.What() + ": " + v.Got()
	case *InferResponse:
		return v.Ex.What() + ": " + v.Ex.Got()
	case *Object:
		return v.Ex.What() + ": " + v.Ex.Got()
	case *Call:
		return v.Name() + ": " + v.Got()
	}
	return fmt.Sprintf("got %v", actual)
}

// ----- HTTP status and bodies -----

// HaveStatus matches an exchange answered with one of the given statuses.
func HaveStatus(want ...int) types.GomegaMatcher {
	return newMatcher(fmt.Sprintf("answer %v", want), func(actual any) error {
		e, err := exchangeOf(actual)
		if err != nil {
			return err
		}
		if !slices.Contains(want, e.Status) {
			if wantsSuccess(want) && (e.Status < 200 || e.Status > 299) {
				return failedAnswer("%s: %s, want %s", e.What(), e.Got(), statusList(want))
			}
			return fmt.Errorf("%s: %s, want %s", e.What(), e.Got(), statusList(want))
		}
		return nil
	})
}

// wantsSuccess reports whether every wanted status is a 2xx.
func wantsSuccess(want []int) bool {
	for _, s := range want {
		if s < 200 || s > 299 {
			return false
		}
	}
	return len(want) > 0
}

func statusList(s []int) string {
	parts := make([]string, len(s))
	for i, c := range s {
		parts[i] = fmt.Sprint(c)
	}
	return strings.Join(parts, " or ")
}

// BeClientError matches a 4xx answer.
func BeClientError() types.GomegaMatcher {
	return newMatcher("answer a 4xx", func(actual any) error {
		e, err := exchangeOf(actual)
		if err != nil {
			return err
		}
		if e.Status < 400 || e.Status >= 500 {
			return fmt.Errorf("%s: %s, want a 4xx", e.What(), e.Got())
		}
		return nil
	})
}

// AvoidServerError matches any answer but a 5xx. A 5xx reports a server
// fault, never a rejected request, and the catalog grades it FAIL whatever
// the requirement's level (OIP-REST-ERR-003: "PASS = 400; WARN = other 4xx;
// FAIL = 5xx").
func AvoidServerError() types.GomegaMatcher {
	return newMatcher("answer a 5xx", func(actual any) error {
		e, err := exchangeOf(actual)
		if err != nil {
			return err
		}
		if e.Status >= 500 {
			return serverFault("a 5xx is a server fault, never a rejection (OIP-REST-ERR-003)",
				"%s: %s, want a 4xx (or success)", e.What(), e.Got())
		}
		return nil
	})
}

// HaveTypicalErrorStatus matches the status the catalog expects of a
// rejected request, 400 ("typically 400"); another 4xx is graded by the
// requirement (OIP-REST-ERR-003: a warning), a 5xx fails whatever the
// requirement (see [AvoidServerError]).
func HaveTypicalErrorStatus() types.GomegaMatcher {
	return newMatcher("answer 400", func(actual any) error {
		e, err := exchangeOf(actual)
		if err != nil {
			return err
		}
		switch {
		case e.Status >= 500:
			return serverFault("a 5xx is a server fault, never a rejection (OIP-REST-ERR-003)",
				"%s: %s, want 4xx: a 5xx reports a server fault, not a rejected request", e.What(), e.Got())
		case e.Status != http.StatusBadRequest:
			return fmt.Errorf("%s: got %d, want 400 (\"typically 400\")", e.What(), e.Status)
		}
		return nil
	})
}

// BeRejected matches a refusal: over REST an error status (>= 400), over
// gRPC a non-OK status the server sent. Its failure is a negative result:
// the server accepted a request that breaks the rule, which is lenient when
// the rule binds clients and graded by the requirement when it binds
// servers.
//
// In an extension spec (one that [Needs] a feature) a refusal that reports
// a server fault — a 5xx, or gRPC INTERNAL, UNKNOWN or DATA_LOSS — is no
// refusal: it fails the check's requirement as the server's fault
// ([extensionFault]). In a core spec, and in an extension spec labelled
// with OIP-REST-ERR-003, a 5xx passes here and is judged once, by
// [AvoidServerError] or [HaveTypicalErrorStatus] under OIP-REST-ERR-003.
func BeRejected() types.GomegaMatcher { return beRejected(specLabels) }

// specLabels are the running spec's labels (none outside a spec).
func specLabels() []string { return ginkgo.CurrentSpecReport().Labels() }

func beRejected(labels func() []string) types.GomegaMatcher {
	return newMatcher("refuse the request", func(actual any) error {
		if c, ok := actual.(*Call); ok {
			switch {
			case c.Err == nil:
				return accepted("%s: %s, want a non-OK status", c.Name(), c.Got())
			case ClientSide(c.Err):
				// The status was made up by the client because the
				// server's answer could not be read: the server refused
				// nothing.
				return fmt.Errorf("%s: the answer could not be decoded (%v), want a non-OK status from the server", c.Name(), c.Err)
			case slices.Contains(faultCodes, c.Code()) && extensionFault(labels(), TransportGRPC):
				return serverFault(fmt.Sprintf("%s reports a server fault, never a refused request (OIP-GRPC-ERR-002: server fault → INTERNAL)", c.Code()),
					"%s: %s, want a client error status (INVALID_ARGUMENT, NOT_FOUND, …)", c.Name(), c.Got())
			}
			return nil
		}
		e, err := exchangeOf(actual)
		if err != nil {
			return err
		}
		switch {
		case e.Status < 400:
			return accepted("%s: %s, want an error status (typically 400) with {\"error\": string}", e.What(), e.Got())
		case e.Status >= 500 && e.Status != http.StatusNotImplemented && extensionFault(labels(), TransportREST):
			// 501 is REST's UNIMPLEMENTED: a refusal of a feature the
			// server does not offer (Triton's logging answers it for
			// log_file), not a fault.
			return serverFault("a 5xx is a server fault, never a rejection (OIP-REST-ERR-003)",
				"%s: %s, want a 4xx (typically 400) with {\"error\": string}", e.What(), e.Got())
		}
		return nil
	})
}

// BeFailedRequest matches a request the server refused or failed on its
// own side: any error status or non-OK code, a 5xx and INTERNAL included.
// For a request that is valid but cannot succeed for a reason on the
// server's side (loading a model whose artifacts are missing), where a 5xx
// is the honest answer rather than a fault.
func BeFailedRequest() types.GomegaMatcher {
	return beRejected(func() []string { return nil })
}

// faultCodes are the gRPC codes that report a server fault rather than a
// refused request (OIP-GRPC-ERR-002 recommends INTERNAL for a server
// fault; UNKNOWN and DATA_LOSS say no more). UNIMPLEMENTED and UNAVAILABLE
// are refusals: the catalog recommends them for an unsupported feature and
// a model or server not ready.
var faultCodes = []codes.Code{codes.Internal, codes.Unknown, codes.DataLoss}

// extensionFault reports whether a refusal reporting a server fault fails
// the check itself in a spec with these labels: in an extension spec,
// unless (REST) the spec grades the status under OIP-REST-ERR-003 already,
// which would count the one 5xx twice.
func extensionFault(labels []string, tr Transport) bool {
	if len(LabelValues(labels, LabelKeyFeature)) == 0 {
		return false
	}
	return tr != TransportREST || !slices.Contains(labels, LabelKeyReq+errStatusReq)
}

// errStatusReq grades the status of a rejected REST request: 400 passes,
// another 4xx is a warning, a 5xx fails.
const errStatusReq = "OIP-REST-ERR-003"

// HaveErrorBody matches the REST error form {"error": string} (catalog
// OIP-REST-ERR-001/002; OIP-REST-ERR-006: error is required).
func HaveErrorBody() types.GomegaMatcher {
	return newMatcher(`carry {"error": string}`, func(actual any) error {
		e, err := exchangeOf(actual)
		if err != nil {
			return err
		}
		m, err := DecodeObject(e.Body)
		if err != nil {
			return fmt.Errorf("error body: %v; %s, want {\"error\": string}", err, e.Got())
		}
		if _, err := StringField(m, "error"); err != nil {
			return fmt.Errorf("error body: %v; %s, want {\"error\": string}", err, e.Got())
		}
		return nil
	})
}

// BeErrorResponse matches the catalog's "error response": an error status
// (>= 400) and the body {"error": string}.
func BeErrorResponse() types.GomegaMatcher {
	rejected, body := BeRejected(), HaveErrorBody()
	return newMatcher(`answer an error status with {"error": string}`, func(actual any) error {
		if ok, _ := rejected.Match(actual); !ok {
			return rejected.(*matcher).err
		}
		if ok, _ := body.Match(actual); !ok {
			return body.(*matcher).err
		}
		return nil
	})
}

// HaveNonEmptyError matches an error body whose message is not empty.
func HaveNonEmptyError() types.GomegaMatcher {
	return newMatcher("carry an error message", func(actual any) error {
		e, err := exchangeOf(actual)
		if err != nil {
			return err
		}
		m, err := DecodeObject(e.Body)
		if err != nil {
			return fmt.Errorf("error body: %v; %s, want {\"error\": string}", err, e.Got())
		}
		s, err := StringField(m, "error")
		if err != nil {
			return fmt.Errorf("error body: %v; %s", err, e.Got())
		}
		if strings.TrimSpace(s) == "" {
			return fmt.Errorf("error message is empty")
		}
		return nil
	})
}

// HaveContentType matches a Content-Type of the given media type
// (parameters such as charset aside).
func HaveContentType(mediaType string) types.GomegaMatcher {
	return newMatcher("be "+mediaType, func(actual any) error {
		e, err := exchangeOf(actual)
		if err != nil {
			return err
		}
		if ct := e.Header.Get("Content-Type"); !isMediaType(ct, mediaType) {
			return fmt.Errorf("%s: Content-Type %q, want %s", e.What(), ct, mediaType)
		}
		return nil
	})
}

// HaveJSONObjectBody matches a body that is one JSON object.
func HaveJSONObjectBody() types.GomegaMatcher {
	return newMatcher("carry a JSON object", func(actual any) error {
		_, err := objectOf(actual)
		return err
	})
}

// HaveJSONString matches a JSON body (or the JSON header of a binary
// inference response) whose top-level member key is the string want.
func HaveJSONString(key, want string) types.GomegaMatcher {
	return newMatcher(fmt.Sprintf("carry %s %q", key, want), func(actual any) error {
		e, err := exchangeOf(actual)
		if err != nil {
			return err
		}
		m, err := leadingObject(e.Body)
		if err != nil {
			return fmt.Errorf("%s: %v (%s)", e.What(), err, e.Got())
		}
		got, err := StringField(m, key)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("%s is %q, want %q", key, clip(got, 80), clip(want, 80))
		}
		return nil
	})
}

// leadingObject decodes the JSON object at the start of b, ignoring what
// follows it (a binary tail).
func leadingObject(b []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]json.RawMessage
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, fmt.Errorf("body does not start with a JSON object")
	}
	return m, nil
}

// HaveHealthBody matches an optional health body: an empty body, or
// a JSON object whose boolean member (the first of keys present) agrees
// with the status code.
func HaveHealthBody(keys ...string) types.GomegaMatcher {
	return newMatcher("carry a consistent health body", func(actual any) error {
		e, err := exchangeOf(actual)
		if err != nil {
			return err
		}
		if len(e.Body) == 0 {
			return nil
		}
		m, err := DecodeObject(e.Body)
		if err != nil {
			return fmt.Errorf("%s: non-empty body is not a JSON object: %v", e.Path, err)
		}
		for _, k := range keys {
			raw, ok := m[k]
			if !ok {
				continue
			}
			var b bool
			if err := json.Unmarshal(raw, &b); err != nil {
				return fmt.Errorf("%s: %q is %s, want a boolean", e.Path, k, raw)
			}
			if b != (e.Status == http.StatusOK) {
				return fmt.Errorf("%s: status %d but body says %q: %v", e.Path, e.Status, k, b)
			}
			return nil
		}
		return fmt.Errorf("%s: body %s has none of %q", e.Path, clip(string(e.Body), 200), keys)
	})
}

// ----- gRPC status -----

// BeOK matches a call that succeeded. A status the client made up because
// the answer could not be read is no usable answer and fails whatever the
// requirement.
func BeOK() types.GomegaMatcher {
	return newMatcher("succeed", func(actual any) error {
		c, err := callOf(actual)
		if err != nil {
			return err
		}
		return okCall(c)
	})
}

// HaveCode matches a call that ended with one of the given status codes.
func HaveCode(want ...codes.Code) types.GomegaMatcher {
	return newMatcher("end with "+codeList(want), func(actual any) error {
		c, err := callOf(actual)
		if err != nil {
			return err
		}
		if !slices.Contains(want, c.Code()) {
			return fmt.Errorf("%s: got %s, recommended %s", c.Name(), c.Code(), codeList(want))
		}
		return nil
	})
}

func codeList(cs []codes.Code) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.String()
	}
	return strings.Join(parts, " or ")
}

// HaveStatusMessage matches a failed call whose status carries a message.
func HaveStatusMessage() types.GomegaMatcher {
	return newMatcher("carry a status message", func(actual any) error {
		c, err := callOf(actual)
		if err != nil {
			return err
		}
		if c.Err != nil && strings.TrimSpace(status.Convert(c.Err).Message()) == "" {
			return fmt.Errorf("%s: %s has an empty message", c.Name(), c.Code())
		}
		return nil
	})
}

// CarryResult matches an OK answer that carries a result: a failure must
// be signalled by a non-OK status, not by an empty message
// (OIP-GRPC-SVC-002).
func CarryResult() types.GomegaMatcher {
	return newMatcher("carry a result", func(actual any) error {
		c, err := callOf(actual)
		if err != nil {
			return err
		}
		if c.Err == nil {
			if empty := emptyResponse(c.Resp); empty != "" {
				return fmt.Errorf("%s: OK with %s; a failure must be signalled by a non-OK status", c.Name(), empty)
			}
		}
		return nil
	})
}

// HaveNoUnknownFields matches a reply that carries no field the OIP proto
// does not define, a sign of a different wire layout (OIP-GEN-007),
// including a ModelMetadata reply that decoded only tolerantly.
func HaveNoUnknownFields() types.GomegaMatcher {
	return newMatcher("use the OIP wire layout", func(actual any) error {
		c, err := callOf(actual)
		if err != nil {
			return err
		}
		if err := okCall(c); err != nil {
			return err
		}
		return errs(c.Wire, unknownFields(c.Resp))
	})
}

// ----- tensors -----

// EqualTensor matches a tensor.Tensor equal to want (see compareTensor:
// datatype, shape, and every element bit for bit, NaN as NaN).
func EqualTensor(want tensor.Tensor) types.GomegaMatcher {
	return PassCheck(func(got tensor.Tensor) error { return compareTensor(want, got, false) })
}

// All matches when every matcher matches; its failure lists every failure
// (each message once), graded as the first failure says.
func All(ms ...types.GomegaMatcher) types.GomegaMatcher {
	var first types.GomegaMatcher
	return &allMatcher{ms: ms, first: &first}
}

type allMatcher struct {
	ms    []types.GomegaMatcher
	first *types.GomegaMatcher
	msgs  []string
}

func (a *allMatcher) Match(actual any) (bool, error) {
	a.msgs, *a.first = nil, nil
	for _, m := range a.ms {
		ok, err := m.Match(actual)
		if err != nil {
			return false, err
		}
		if ok {
			continue
		}
		if *a.first == nil {
			*a.first = m
		}
		if msg := m.FailureMessage(actual); !slices.Contains(a.msgs, msg) {
			a.msgs = append(a.msgs, msg)
		}
	}
	return len(a.msgs) == 0, nil
}

func (a *allMatcher) forRequirement(req string) {
	for _, m := range a.ms {
		if ra, ok := m.(requirementAware); ok {
			ra.forRequirement(req)
		}
	}
}

func (a *allMatcher) FailureMessage(any) string { return strings.Join(a.msgs, "\n") }

func (a *allMatcher) NegatedFailureMessage(actual any) string {
	return fmt.Sprintf("%s, want it to fail one of %d checks", gotOf(actual), len(a.ms))
}

func (a *allMatcher) grading() grading {
	if g, ok := (*a.first).(gradedMatcher); ok {
		return g.grading()
	}
	return grading{}
}

// Succeed matches a nil error; the failure message is the error's text. It
// is for checks computed elsewhere (a tolerant decoder's report), with the
// exchange or call given by [Check.On].
func Succeed() types.GomegaMatcher {
	return newMatcher("fail", func(actual any) error {
		if actual == nil {
			return nil
		}
		err, ok := actual.(error)
		if !ok {
			return fmt.Errorf("conformance suite bug: Succeed on a %T", actual)
		}
		return err
	})
}
