package suite

import (
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
