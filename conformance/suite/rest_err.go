package suite

import (
	"bytes"

	. "github.com/onsi/ginkgo/v2"

	. "github.com/oipkit/oipkit/conformance/engine"
)

// OIP-REST-ERR: the REST error response.

var _ = Describe("REST inference errors", Over(TransportREST), func() {
	BeforeEach(func() { NeedFixture("add_sub") })

	It("sends a non-empty error message", Req("OIP-REST-ERR-004"), func(ctx SpecContext) {
		AfterNegative()
		Verify(PostRaw(ctx, "add_sub", nil, []byte(`{"inputs": [`))).To(HaveNonEmptyError())
	})

	It("serves error bodies as application/json", Req("OIP-REST-ERR-005"), func(ctx SpecContext) {
		AfterNegative()
		Verify(PostRaw(ctx, "add_sub", nil, []byte(`{"inputs": [`))).To(HaveContentType("application/json"))
	})

	It("includes the error member in every error body", Req("OIP-REST-ERR-006"), func(ctx SpecContext) {
		AfterNegative()
		for _, body := range []string{`{}`, `{"inputs": [`} {
			Verify(PostRaw(ctx, "add_sub", nil, []byte(body))).To(HaveErrorBody())
		}
	})
})

// Requests some servers do not survive run after every other spec
// (engine.RunsAfterLast; the deep nesting RunsFinal): a server that dies here leaves
// nothing else not run.
var _ = Describe("REST inference errors, an oversized body", RunsAfterLast, Oversized, Over(TransportREST), func() {
	BeforeEach(func() { NeedFixture("add_sub") })

	// Larger than the common default limits (64 MiB: Triton's
	// --http-max-input-size, the reference's --max-body-bytes): a server
	// may refuse it (413 or 400) or read it and refuse a data array that
	// does not fit [1,16]. The size is the subject, not the element count:
	// each element is padded to 1 KiB with blanks (valid JSON), so a
	// server that does read it parses 66,560 elements, not 34 million. The
	// body is built once, in place.
	It("refuses a 65 MiB body with a 4xx and stays live", Req("OIP-REST-ERR-007", "OIP-REST-ERR-003"), func(ctx SpecContext) {
		AfterNegative()
		const size = 65 << 20
		element := append([]byte("0,\n"), bytes.Repeat([]byte(" "), 1021)...)
		body := addSubSpliced(size, func(out []byte) []byte {
			out = append(out, '[')
			for len(out) < size-2048 {
				out = append(out, element...)
			}
			return append(out, '0', ']')
		})
		refusedUnread(PostRaw(ctx, "add_sub", nil, body))
	})
})

var _ = Describe("REST inference errors, deep nesting", RunsFinal, Over(TransportREST), func() {
	BeforeEach(func() { NeedFixture("add_sub") })

	// A Python server's json module recurses per level: a deep enough
	// document is a RecursionError, answered 500. Triton 2.51's HTTP
	// frontend exits on it (the process is gone; seen in make interop).
	It("refuses INPUT0 data nested 100,000 levels deep with a 4xx and stays live", Req("OIP-REST-ERR-007", "OIP-REST-ERR-003"), func(ctx SpecContext) {
		AfterNegative()
		const depth = 100_000
		body := addSubSpliced(2*depth+1, func(out []byte) []byte {
			out = append(out, bytes.Repeat([]byte("["), depth)...)
			out = append(out, '0')
			return append(out, bytes.Repeat([]byte("]"), depth)...)
		})
		refusedUnread(PostRaw(ctx, "add_sub", nil, body))
	})
})

// addSubSpliced is the add_sub JSON body with INPUT0's data written by fill
// (about n bytes of it), straight into the one buffer the body is sent from.
func addSubSpliced(n int, fill func(out []byte) []byte) []byte {
	const mark = `"oipkit-splice"`
	b, _, _ := addSubRequest()
	input0(b)["data"] = "oipkit-splice"
	enc, _ := b.Encode()
	before, after, _ := bytes.Cut(enc, []byte(mark))
	out := make([]byte, 0, len(enc)+n)
	out = fill(append(out, before...))
	return append(out, after...)
}

// refusedUnread grades the answer to a body the server cannot take whole:
// any 4xx passes; a 5xx is a server fault whatever the level; a success is
// a bad request accepted. No answer at all, or a server no longer live
// afterwards (AfterNegative), is a failure too.
func refusedUnread(e *Exchange) {
	if e.Err == nil && e.Status >= 500 {
		// A 5xx to a request the server must refuse is the core's server
		// fault, judged once under OIP-REST-ERR-003 with every other bad
		// input it answers 5xx (a RecursionError or a failed reshape is
		// one more such answer); OIP-REST-ERR-007's own subject is a server
		// that answers nothing or does not survive the request.
		VerifyReq(errStatusReq, e).To(AvoidServerError())
		return
	}
	VerifyReq("OIP-REST-ERR-007", e).To(BeRejected())
}
