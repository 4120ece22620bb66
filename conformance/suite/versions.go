package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"

	. "github.com/oipkit/oipkit/conformance/engine"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// Versions a model does not have, asked of add_sub on every route that
// takes a version, so that no versioned fixture is needed: most runtimes
// deploy none, and answering a version the model does not serve as if it
// were valid is a real runtime defect.

// versionCandidates are version strings add_sub certainly does not have
// unless its metadata lists them. The spec makes versions strings, not
// integers, so a version is unknown only because the metadata does
// not list it: "abc", "1.5" and "-1" are valid spellings a server may
// serve, and are tried only when not listed. "01" is not tried: a server
// with integer versions (Triton) reads it as version 1, which the spec
// does not forbid.
var versionCandidates = []string{"999", "abc", "1.5", "-1"}

// unlisted returns the candidates not in listed.
func unlisted(listed []string) []string {
	var out []string
	for _, v := range versionCandidates {
		if !slices.Contains(listed, v) {
			out = append(out, v)
		}
	}
	return out
}

// addSubVersionsREST returns the versions add_sub's REST metadata lists
// (none when it lists none or cannot be read: every candidate is then
// unknown).
func addSubVersionsREST(ctx context.Context) []string {
	e := Get(ctx, "/v2/models/add_sub")
	var m struct {
		Versions []string `json:"versions"`
	}
	if e.Err != nil || e.Status != http.StatusOK || json.Unmarshal(e.Body, &m) != nil {
		return nil
	}
	return m.Versions
}

// addSubVersionsGRPC is addSubVersionsREST over gRPC.
func addSubVersionsGRPC(ctx context.Context) []string {
	resp, c := ModelMetadata(ctx, &pb.ModelMetadataRequest{Name: "add_sub", Version: ""})
	if c.Err != nil {
		return nil
	}
	return resp.GetVersions()
}

func quoted(vs []string) string {
	if len(vs) == 0 {
		return "none"
	}
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, ", ")
}

// restVersionGrading says how one REST route's answers to unknown versions
// are graded. req is the requirement an accepted version breaks ("" in a
// spec labelled with it alone, see verifyAs), id the same requirement for
// notes.
type restVersionGrading struct {
	id, req string
	// faultReq grades a 5xx as a server fault ("" for req).
	faultReq string
	// health: a 503 is a "not ready" answer, graded by refused.
	health bool
	// refused grades the first refusal (status and body).
	refused func(e *Exchange)
}

// askVersionsREST sends, by send, one request per version add_sub does not
// have and grades the answers, one finding per defect: every version
// answered as if valid is named in one finding, every 5xx in one more, and
// the first refusal is graded for its form. A 501 from a server whose
// add_sub lists no versions says versioned routes are not implemented,
// which A-08 accepts.
func askVersionsREST(ctx context.Context, g restVersionGrading, send func(v string) *Exchange) {
	listed := addSubVersionsREST(ctx)
	versions := unlisted(listed)
	es := make([]*Exchange, len(versions))
	for i, v := range versions {
		es[i] = send(v)
	}
	var accepted, faults []string
	var firstAccepted, firstFault, firstRefusal *Exchange
	for i, e := range es {
		if !Answered(e) {
			continue
		}
		v := versions[i]
		switch {
		case e.Status < 400:
			accepted = append(accepted, v)
			if firstAccepted == nil {
				firstAccepted = e
			}
		case e.Status == http.StatusNotImplemented && len(listed) == 0:
			Note(g.id, "%s answered 501: versioned routes not implemented, and add_sub lists no versions (A-08)", e.What())
		case e.Status >= 500 && !(g.health && e.Status == http.StatusServiceUnavailable):
			faults = append(faults, v)
			if firstFault == nil {
				firstFault = e
			}
		case firstRefusal == nil:
			firstRefusal = e
		}
	}
	if firstAccepted != nil {
		verifyAs(g.req, firstAccepted).To(BeRejected(),
			fmt.Sprintf("add_sub answered version %s as if valid; its metadata lists %s", quoted(accepted), quoted(listed)))
	}
	if firstFault != nil {
		verifyAs(g.faultReq, firstFault).To(AvoidServerError(),
			fmt.Sprintf("add_sub answered version %s with a server error", quoted(faults)))
	}
	if firstRefusal != nil {
		g.refused(firstRefusal)
	}
}

// askVersionsGRPC is askVersionsREST for an RPC: calls answered as if the
// version were valid (ready=true for ModelReady, which isReady tells) are
// named in one finding, and the first refusal is graded by grpcRejects
// (NOT_FOUND or INVALID_ARGUMENT expected, A-03). The spec carries req and
// grpcRejects' labels.
func askVersionsGRPC(ctx context.Context, req string, call func(v string) *Call, isReady func(*Call) bool) {
	listed := addSubVersionsGRPC(ctx)
	versions := unlisted(listed)
	cs := make([]*Call, len(versions))
	for i, v := range versions {
		cs[i] = call(v)
	}
	var accepted []string
	var firstAccepted, firstRefusal *Call
	for i, c := range cs {
		if !Answered(c) {
			continue
		}
		switch {
		case c.Err == nil && (isReady == nil || isReady(c)):
			accepted = append(accepted, versions[i])
			if firstAccepted == nil {
				firstAccepted = c
			}
		case c.Err != nil && firstRefusal == nil:
			firstRefusal = c
		}
	}
	if firstAccepted != nil {
		VerifyReq(req, firstAccepted).To(BeRejected(),
			fmt.Sprintf("add_sub answered version %s as if valid; its metadata lists %s", quoted(accepted), quoted(listed)))
		if isReady == nil {
			VerifyReq("OIP-GRPC-SVC-002", firstAccepted).To(CarryResult())
		}
	}
	if firstRefusal != nil {
		want := []codes.Code{codes.NotFound, codes.InvalidArgument}
		if len(listed) == 0 {
			// A server whose add_sub lists no versions may not implement
			// version selection at all (A-08, as a REST 501).
			want = append(want, codes.Unimplemented)
		}
		grpcRejects(firstRefusal, req, "", want...)
	}
}
