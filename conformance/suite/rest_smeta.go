package suite

import (
	"errors"
	"fmt"
	"net/http"
	"slices"

	. "github.com/onsi/ginkgo/v2"

	. "github.com/oipkit/oipkit/conformance/engine"
)

// OIP-REST-SMETA: REST server metadata.

var _ = Describe("REST server metadata", Over(TransportREST), func() {
	It("answers GET /v2 with 200 and a JSON object", Req("OIP-REST-SMETA-001"), func(ctx SpecContext) {
		e := Get(ctx, "/v2")
		if Verify(e).To(HaveStatus(http.StatusOK)) {
			Verify(e).To(HaveJSONObjectBody())
		}
	})

	// A healthy server cannot be made to fail GET /v2, so this check is
	// opportunistic: whenever server metadata fails, the answer must carry
	// an error status and the {"error": string} body. It fails a server whose
	// /v2 breaks with, say, a 503 and an HTML page.
	It("answers a failed server-metadata request with an error status and an {\"error\": string} body", Req("OIP-REST-SMETA-005"), func(ctx SpecContext) {
		e := Get(ctx, "/v2")
		if !Answered(e) {
			return
		}
		switch {
		case e.Status >= 200 && e.Status < 300:
			Note("OIP-REST-SMETA-005", "GET /v2 succeeded (%d); the error form was not observed", e.Status)
		case e.Status < 400:
			Verify(e).To(HaveStatus(http.StatusOK), "want 200 or an error status (>= 400) with {\"error\": string}")
		default:
			Verify(e).To(HaveErrorBody())
		}
	})

	It("has a string name, a string version and an array of string extensions", Req("OIP-REST-SMETA-002"), func(ctx SpecContext) {
		Verify(Get(ctx, "/v2")).To(MatchSchema())
	})

	It("has a non-empty name and version", Req("OIP-REST-SMETA-003"), func(ctx SpecContext) {
		Verify(Get(ctx, "/v2")).To(PassCheck(func(o *Object) error {
			var list []error
			for _, k := range []string{"name", "version"} {
				if s, err := o.String(k); err == nil && s == "" {
					list = append(list, fmt.Errorf("%q is empty", k))
				}
			}
			return errors.Join(list...)
		}))
	})

	It("lists each extension at most once", Req("OIP-REST-SMETA-004"), func(ctx SpecContext) {
		Verify(Get(ctx, "/v2")).To(PassCheck(func(o *Object) error {
			exts, err := extensionsField(o.Members)
			if err != nil {
				return err
			}
			var list []error
			for i, x := range exts {
				if slices.Contains(exts[:i], x) {
					list = append(list, fmt.Errorf("extension %q is listed twice in %q", x, exts))
				}
			}
			return errors.Join(list...)
		}))
		// Names outside the vocabulary are recorded, not graded: OIP
		// defines no standard names (Triton's are the de-facto set).
		if u := Current().UnknownExtensions; len(u) > 0 {
			Note("OIP-REST-SMETA-004", "advertised extensions outside the vocabulary: %q", u)
		}
	})

	It("serves server metadata as application/json", Req("OIP-REST-SMETA-006"), func(ctx SpecContext) {
		e := Get(ctx, "/v2")
		if Verify(e).To(HaveStatus(http.StatusOK)) {
			Verify(e).To(HaveContentType("application/json"))
		}
	})

	It("records how GET /v2/ with a trailing slash is answered", Req("OIP-REST-SMETA-007"), func(ctx SpecContext) {
		e := Get(ctx, "/v2/")
		if !Answered(e) {
			return
		}
		Note("OIP-REST-SMETA-007", "GET /v2/ answered %d", e.Status)
		Verify(e).To(PassCheck(func(e *Exchange) error {
			if e.Status >= 500 {
				return fmt.Errorf("GET /v2/: %s, want 200 or a 4xx", e.Got())
			}
			return nil
		}))
	})
})
