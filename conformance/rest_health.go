package conformance

import (
	"encoding/json"
	"fmt"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
)

// healthBody checks an optional health body: an empty body is fine;
// a non-empty one must be a JSON object whose boolean key (any of keys)
// agrees with the status code.
func healthBody(e *exchange, keys ...string) error {
	if err := e.answered(); err != nil {
		return err
	}
	if len(e.body) == 0 {
		return nil
	}
	m, err := decodeObject(e.body)
	if err != nil {
		return fmt.Errorf("%s: non-empty body is not a JSON object: %v", e.path, err)
	}
	for _, k := range keys {
		raw, ok := m[k]
		if !ok {
			continue
		}
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return fmt.Errorf("%s: %q is %s, want a boolean", e.path, k, raw)
		}
		if b != (e.status == http.StatusOK) {
			return fmt.Errorf("%s: status %d but body says %q: %v", e.path, e.status, k, b)
		}
		return nil
	}
	return fmt.Errorf("%s: body %s has none of %q", e.path, clip(string(e.body), 200), keys)
}

var _ = Describe("REST health", Over(TransportREST), func() {
	It("answers GET /v2/health/live with 200", Req("OIP-REST-HEALTH-001"), func(ctx SpecContext) {
		e := tgt.get(ctx, "/v2/health/live")
		grade(on("OIP-REST-HEALTH-001", e, e.wantStatus(http.StatusOK)))
	})

	It("sends an empty live body or one consistent with the status", Req("OIP-REST-HEALTH-004"), func(ctx SpecContext) {
		e := tgt.get(ctx, "/v2/health/live")
		grade(on("OIP-REST-HEALTH-004", e, healthBody(e, "live")))
	})

	It("answers a plain GET probe on the health routes", Req("OIP-REST-HEALTH-014"), func(ctx SpecContext) {
		var fs []finding
		for _, p := range []string{"/v2/health/live", "/v2/health/ready"} {
			e := tgt.get(ctx, p)
			fs = append(fs, on("OIP-REST-HEALTH-014", e, e.wantStatus(http.StatusOK)))
		}
		grade(fs...)
	})

	It("serves server metadata while live", Req("OIP-REST-HEALTH-002"), func(ctx SpecContext) {
		live := tgt.get(ctx, "/v2/health/live")
		if live.err != nil || live.status != http.StatusOK {
			Skip("the server does not report live")
		}
		e := tgt.get(ctx, "/v2")
		grade(on("OIP-REST-HEALTH-002", e, e.wantStatus(http.StatusOK)))
	})

	It("answers GET /v2/health/ready with 200 when the fixtures are loaded", Req("OIP-REST-HEALTH-005"), func(ctx SpecContext) {
		e := tgt.get(ctx, "/v2/health/ready")
		grade(on("OIP-REST-HEALTH-005", e, e.wantStatus(http.StatusOK)))
	})

	It("sends an empty ready body or one consistent with the status", Req("OIP-REST-HEALTH-007"), func(ctx SpecContext) {
		e := tgt.get(ctx, "/v2/health/ready")
		grade(on("OIP-REST-HEALTH-007", e, healthBody(e, "ready", "live")))
	})

	It("answers model ready with 200 for a loaded model", Req("OIP-REST-HEALTH-008"), func(ctx SpecContext) {
		needFixture("add_sub")
		e := tgt.get(ctx, "/v2/models/add_sub/ready")
		grade(on("OIP-REST-HEALTH-008", e, e.wantStatus(http.StatusOK)))
	})

	It("sends an empty model-ready body or one naming the model and consistent with the status", Req("OIP-REST-HEALTH-012"), func(ctx SpecContext) {
		needFixture("add_sub")
		e := tgt.get(ctx, "/v2/models/add_sub/ready")
		err := healthBody(e, "ready")
		if err == nil && len(e.body) > 0 {
			m, _ := decodeObject(e.body)
			if _, ok := m["name"]; ok {
				if name, nerr := stringField(m, "name"); nerr != nil || name != "add_sub" {
					err = fmt.Errorf("%s: body name %s, want \"add_sub\"", e.path, m["name"])
				}
			}
		}
		grade(on("OIP-REST-HEALTH-012", e, err))
	})

	It("answers versioned model ready with 200 for each loaded version", Req("OIP-REST-HEALTH-009"), func(ctx SpecContext) {
		needVersions()
		var fs []finding
		for _, v := range []string{"1", "2"} {
			e := tgt.get(ctx, "/v2/models/versioned/versions/"+v+"/ready")
			fs = append(fs, on("OIP-REST-HEALTH-009", e, e.wantStatus(http.StatusOK)))
		}
		grade(fs...)
	})

	It("answers versioned model ready with 4xx for a version that is not loaded", Req("OIP-REST-HEALTH-009"), func(ctx SpecContext) {
		needVersions()
		afterNegative()
		e := tgt.get(ctx, "/v2/models/versioned/versions/99/ready")
		grade(notReady(e, "OIP-REST-HEALTH-009")...)
	})

	It("answers model ready with 4xx for an unknown model", Req("OIP-REST-HEALTH-010", "OIP-REST-HEALTH-003"), func(ctx SpecContext) {
		afterNegative()
		e := tgt.get(ctx, "/v2/models/does_not_exist/ready")
		grade(append(notReady(e, "OIP-REST-HEALTH-010"), notReady(e, "OIP-REST-HEALTH-003")...)...)
	})

	It("records the version policy of unversioned model ready", Req("OIP-REST-HEALTH-011"), func(ctx SpecContext) {
		needFixture("versioned")
		e := tgt.get(ctx, "/v2/models/versioned/ready")
		var err error
		switch {
		case e.err != nil:
			err = e.answered()
		case e.status == http.StatusOK || (e.status >= 400 && e.status < 500):
			note("OIP-REST-HEALTH-011", "GET /v2/models/versioned/ready answered %d", e.status)
		default:
			err = fmt.Errorf("%s: %s, want 200 or a 4xx", e.path, e.got())
		}
		grade(on("OIP-REST-HEALTH-011", e, err))
	})

	It("rejects a model-ready URL without a model name", Req("OIP-REST-HEALTH-013"), func(ctx SpecContext) {
		afterNegative()
		e := tgt.get(ctx, "/v2/models//ready")
		var err error
		if err = e.answered(); err == nil && (e.status < 400 || e.status >= 500) {
			err = fmt.Errorf("%s: %s, want a 4xx", e.path, e.got())
		}
		grade(on("OIP-REST-HEALTH-013", e, err))
	})
})

// notReady grades a "false" health answer: 4xx passes (KS-REQ), 503 is a
// warning (A-02: KServe answers 503), any other 5xx is a server fault and
// 2xx/3xx claim readiness: both fail.
func notReady(e *exchange, req string) []finding {
	if err := e.answered(); err != nil {
		return []finding{on("", e, err)}
	}
	switch {
	case e.status >= 400 && e.status < 500:
		return nil
	case e.status == http.StatusServiceUnavailable:
		return []finding{softOn(req, "A-02", e, fmt.Errorf("%s: %s, want a 4xx", e.path, e.got()))}
	case e.status >= 500:
		return []finding{on(req, e, fmt.Errorf("%s: %s, want a 4xx (false); only 503 is tolerated (A-02)", e.path, e.got()))}
	}
	return []finding{on(req, e, fmt.Errorf("%s: %s, want a 4xx (false)", e.path, e.got()))}
}
