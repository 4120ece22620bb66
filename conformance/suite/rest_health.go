package suite

import (
	"fmt"
	"net/http"

	. "github.com/onsi/ginkgo/v2"

	. "github.com/oipkit/oipkit/conformance/engine"
	"github.com/oipkit/oipkit/specs"
)

// OIP-REST-HEALTH: the REST health routes.

var _ = Describe("REST health", Over(TransportREST), func() {
	It("answers GET /v2/health/live with 200", Req("OIP-REST-HEALTH-001"), func(ctx SpecContext) {
		Verify(Get(ctx, "/v2/health/live")).To(HaveStatus(http.StatusOK))
	})

	It("sends an empty live body or one consistent with the status", Req("OIP-REST-HEALTH-004"), func(ctx SpecContext) {
		Verify(Get(ctx, "/v2/health/live")).To(HaveHealthBody("live"))
	})

	It("answers a plain GET probe on the health routes", Req("OIP-REST-HEALTH-014"), func(ctx SpecContext) {
		for _, p := range []string{"/v2/health/live", "/v2/health/ready"} {
			e := Get(ctx, p)
			// Not ready with never_ready deployed still answers the probe
			// (as OIP-REST-HEALTH-005).
			if p == "/v2/health/ready" && FixtureDeployed("never_ready") && e.Err == nil && e.Status >= 400 && e.Status < 500 && !readyOverGRPC(ctx) {
				Note("OIP-REST-HEALTH-014", "the ready probe answered %d with never_ready deployed", e.Status)
				continue
			}
			Verify(e).To(HaveStatus(http.StatusOK))
		}
	})

	It("serves server metadata while live", Req("OIP-REST-HEALTH-002"), func(ctx SpecContext) {
		live := Get(ctx, "/v2/health/live")
		if live.Err != nil || live.Status != http.StatusOK {
			Skip("the server does not report live")
		}
		Verify(Get(ctx, "/v2")).To(HaveStatus(http.StatusOK))
	})

	It("answers GET /v2/health/ready with 200 when the fixtures are loaded", Req("OIP-REST-HEALTH-005"), func(ctx SpecContext) {
		e := Get(ctx, "/v2/health/ready")
		// With never_ready deployed, not ready is the "all models ready"
		// reading, graded in notready.go — unless gRPC says ready.
		if FixtureDeployed("never_ready") && e.Err == nil && e.Status >= 400 && e.Status < 500 && !readyOverGRPC(ctx) {
			Note("OIP-REST-HEALTH-005", "not ready (%d) with never_ready deployed", e.Status)
			return
		}
		Verify(e).To(HaveStatus(http.StatusOK))
	})

	It("sends an empty ready body or one consistent with the status", Req("OIP-REST-HEALTH-007"), func(ctx SpecContext) {
		Verify(Get(ctx, "/v2/health/ready")).To(HaveHealthBody("ready", "live"))
	})

	It("answers model ready with 200 for a loaded model", Req("OIP-REST-HEALTH-008"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		Verify(Get(ctx, "/v2/models/add_sub/ready")).To(HaveStatus(http.StatusOK))
	})

	It("sends an empty model-ready body or one naming the model and consistent with the status", Req("OIP-REST-HEALTH-012"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		e := Get(ctx, "/v2/models/add_sub/ready")
		if !Verify(e).To(HaveHealthBody("ready")) || len(e.Body) == 0 {
			return
		}
		Verify(e).To(PassCheck(func(o *Object) error {
			if raw, ok := o.Members["name"]; ok {
				if name, err := o.String("name"); err != nil || name != "add_sub" {
					return fmt.Errorf("%s: body name %s, want \"add_sub\"", e.Path, raw)
				}
			}
			return nil
		}))
	})

	It("answers versioned model ready with 200 for each loaded version", Req("OIP-REST-HEALTH-009"), func(ctx SpecContext) {
		NeedVersions()
		for _, v := range []string{"1", "2"} {
			Verify(Get(ctx, "/v2/models/versioned/versions/"+v+"/ready")).To(HaveStatus(http.StatusOK))
		}
	})

	// On add_sub, not the versioned fixture (versions.go).
	It("answers model ready with 4xx for versions add_sub does not have", Req("OIP-REST-HEALTH-009"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		AfterNegative()
		askVersionsREST(ctx, restVersionGrading{id: "OIP-REST-HEALTH-009", health: true,
			refused: func(e *Exchange) { notReady(e, "") }},
			func(v string) *Exchange { return Get(ctx, "/v2/models/add_sub/versions/"+PathEscape(v)+"/ready") })
	})

	It("answers model ready with 4xx for an unknown model", Req("OIP-REST-HEALTH-010", "OIP-REST-HEALTH-003"), func(ctx SpecContext) {
		AfterNegative()
		e := Get(ctx, "/v2/models/does_not_exist/ready")
		notReady(e, "OIP-REST-HEALTH-010")
		notReady(e, "OIP-REST-HEALTH-003")
	})

	It("records the version policy of unversioned model ready", Req("OIP-REST-HEALTH-011"), func(ctx SpecContext) {
		NeedFixture("versioned")
		e := Get(ctx, "/v2/models/versioned/ready")
		if Verify(e).To(PassCheck(func(e *Exchange) error {
			if e.Status != http.StatusOK && (e.Status < 400 || e.Status >= 500) {
				return fmt.Errorf("%s: %s, want 200 or a 4xx", e.Path, e.Got())
			}
			return nil
		})) {
			Note("OIP-REST-HEALTH-011", "GET /v2/models/versioned/ready answered %d", e.Status)
		}
	})

	It("rejects a model-ready URL without a model name", Req("OIP-REST-HEALTH-013"), func(ctx SpecContext) {
		AfterNegative()
		Verify(Get(ctx, "/v2/models//ready")).To(BeClientError())
	})

	neverReadyRESTHealthSpecs() // a model that never becomes ready (notready.go)
})

// Server readiness with a model that failed to load needs the model
// repository extension (the broken fixture, and a load that fails).
var _ = Describe("REST health with a failed model", RunsLast, Over(TransportREST), Needs(specs.ExtModelRepository), func() {
	It("is not ready while a model it was asked to load failed", Req("OIP-REST-HEALTH-006"), func(ctx SpecContext) {
		needBroken(ctx)
		takeBackBroken()
		AfterNegative()
		if load := repoPost(ctx, loadPath("broken"), ""); !Answered(load) {
			return
		}
		// Implied, and soft in the catalog: Triton reports it only in its
		// strict readiness mode.
		notReady(Get(ctx, "/v2/health/ready"), "")
	})
})
