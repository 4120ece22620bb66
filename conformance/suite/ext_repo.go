package suite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	. "github.com/onsi/ginkgo/v2"

	. "github.com/oipkit/oipkit/conformance/engine"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// OIP-EXT-REPO: the model repository extension (Triton's): the index of
// every model, loaded or not, and load and unload calls.
//
// State: the specs unload only repo_target, the fixture made for it, and
// load it again when they end (DeferCleanup), whatever happened. The specs
// that try to load broken unload it when they end, which takes back the
// failed load (a server that counts a failed load against its readiness is
// ready again). No other model is ever unloaded.

// The probe asks for the repository index over REST, then over gRPC.
var _ = RegisterProbe(specs.ExtModelRepository, func(ctx context.Context, p *Prober) ProbeResult {
	return p.RESTThenGRPC(ctx, func(ctx context.Context) ProbeResult {
		e := p.Do(ctx, http.MethodPost, "/v2/repository/index", jsonHeader(), []byte("{}"))
		switch {
		case e.Err != nil:
			return Unanswered()
		case indexObserved(e):
			return Observed(e, "POST /v2/repository/index answered the repository index")
		}
		return Absent(e, "POST /v2/repository/index: %s", clipped(e.Got(), 160))
	}, func(ctx context.Context) ProbeResult {
		resp := &pb.RepositoryIndexResponse{}
		c := p.Call(ctx, "RepositoryIndex", &pb.RepositoryIndexRequest{}, resp)
		switch {
		case GRPCNoAnswer(c.Err) != nil:
			return Unanswered()
		case c.Err == nil && len(resp.GetModels()) > 0:
			return Observed(c, "RepositoryIndex answered %d models", len(resp.GetModels()))
		}
		return Absent(c, "RepositoryIndex: %s", clipped(c.Got(), 160))
	}, "no answer to the repository index")
})

// repoPost sends a JSON body (or none) to a repository route.
func repoPost(ctx context.Context, path, body string) *Exchange {
	var b []byte
	if body != "" {
		b = []byte(body)
	}
	return Do(ctx, http.MethodPost, path, jsonHeader(), b)
}

func loadPath(model string) string   { return "/v2/repository/models/" + PathEscape(model) + "/load" }
func unloadPath(model string) string { return "/v2/repository/models/" + PathEscape(model) + "/unload" }

// indexObserved reports whether a probe's answer is an index: a list of
// models the schema accepts, or a JSON array it does not (the extension is
// there; its specs grade the body).
func indexObserved(e *Exchange) bool {
	var list []oip.RepositoryModel
	err := DecodeBody(e, &list)
	return err == nil || errors.Is(err, ErrBodyBreaksSchema) && bytes.HasPrefix(bytes.TrimSpace(e.Body), []byte("["))
}

// indexed returns the index entries of model.
func indexed(list []oip.RepositoryModel, model string) []oip.RepositoryModel {
	var out []oip.RepositoryModel
	for _, m := range list {
		if m.Name == model {
			out = append(out, m)
		}
	}
	return out
}

// listing reads the index answer c checks (ReadBody: a body the schema
// refuses is graded by it, not here) and checks that it lists every model
// of want and none of absent.
func listing(c *Check, want, absent []string) bool {
	list, ok := ReadBody[[]oip.RepositoryModel](c)
	return ok && c.To(PassCheck(func(*Exchange) error {
		var errs []error
		for _, w := range want {
			if len(indexed(list, w)) == 0 {
				errs = append(errs, fmt.Errorf("the index does not list %s", w))
			}
		}
		for _, a := range absent {
			if len(indexed(list, a)) > 0 {
				errs = append(errs, fmt.Errorf("the index lists %s, which is not ready", a))
			}
		}
		return errors.Join(errs...)
	}))
}

// needBroken skips the spec unless the index lists the broken fixture:
// the index is the only place a model that never loads shows up.
func needBroken(ctx context.Context) {
	var list []oip.RepositoryModel
	if err := DecodeBody(Do(ctx, http.MethodPost, "/v2/repository/index", jsonHeader(), []byte("{}")), &list); err == nil && len(indexed(list, "broken")) > 0 {
		return
	}
	Skip(SkipFixture + "broken (not listed in the repository index)")
}

// needBrokenGRPC is needBroken over gRPC.
func needBrokenGRPC(ctx context.Context) {
	r, c := Invoke(ctx, "RepositoryIndex", &pb.RepositoryIndexRequest{}, Stub().RepositoryIndex)
	if c.Err == nil {
		for _, m := range r.GetModels() {
			if m.GetName() == "broken" {
				return
			}
		}
	}
	Skip(SkipFixture + "broken (not listed in the repository index)")
}

// restoreRepoTarget loads repo_target again when the spec ends (and after
// a finding's reproducer).
func restoreRepoTarget() {
	if Targeted(TransportREST) {
		PutBack(UnsentRequest(http.MethodPost, loadPath("repo_target"), jsonHeader(), nil))
		return
	}
	PutBack(UnsentCall("RepositoryModelLoad", &pb.RepositoryModelLoadRequest{ModelName: "repo_target"}))
}

// takeBackBroken unloads broken when the spec ends, taking back a load
// the spec tried.
func takeBackBroken() {
	if Targeted(TransportREST) {
		PutBack(UnsentRequest(http.MethodPost, unloadPath("broken"), jsonHeader(), nil))
		return
	}
	PutBack(UnsentCall("RepositoryModelUnload", &pb.RepositoryModelUnloadRequest{ModelName: "broken"}))
}

var _ = Describe("REST model repository", Over(TransportREST), Needs(specs.ExtModelRepository), func() {
	It("advertises model_repository in server metadata", Req("OIP-EXT-REPO-001"), func(ctx SpecContext) {
		Verify(Get(ctx, "/v2")).To(PassCheck(func(o *Object) error {
			skipUnknownSupport(specs.ExtModelRepository)
			exts, err := extensionsField(o.Members)
			if err != nil {
				return err
			}
			return advertisedErr(exts, specs.ExtModelRepository)
		}))
	})

	It("lists every model of the repository, loaded or not, in the index", Req("OIP-EXT-REPO-002"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		NeedFixture("repo_target")
		listing(Verify(repoPost(ctx, "/v2/repository/index", "{}")), []string{"add_sub", "repo_target"}, nil)
	})

	It("lists a model that never loaded in the index", Req("OIP-EXT-REPO-002"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		needBroken(ctx)
		listing(Verify(repoPost(ctx, "/v2/repository/index", "{}")), []string{"add_sub", "broken"}, nil)
	})

	It("answers an index request whose body is {}", Req("OIP-EXT-REPO-003"), func(ctx SpecContext) {
		// The answer's shape is the schema's (OIP-EXT-REPO-002).
		Verify(repoPost(ctx, "/v2/repository/index", "{}")).To(HaveStatus(http.StatusOK))
		e := repoPost(ctx, "/v2/repository/index", "")
		if Answered(e) {
			Note("OIP-EXT-REPO-003", "an index request without a body answered %d", e.Status)
		}
	})

	It("lists only the models ready for inference when ready is true", Req("OIP-EXT-REPO-004"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		needBroken(ctx)
		listing(Verify(repoPost(ctx, "/v2/repository/index", `{"ready":true}`)), []string{"add_sub"}, []string{"broken"})
	})

	It("gives each model of the index a state and a reason", Req("OIP-EXT-REPO-005"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		// The members' types are the schema's (OIP-EXT-REPO-005 for state,
		// reason and version); their values are checked here.
		e := repoPost(ctx, "/v2/repository/index", "{}")
		Verify(e).To(MatchSchema())
		list, ok := ReadBody[[]oip.RepositoryModel](Verify(e))
		if !ok {
			return
		}
		Verify(e).Soft("the catalog does not enumerate states; Triton's ready state is READY").To(PassCheck(func(*Exchange) error {
			for _, m := range indexed(list, "add_sub") {
				if m.State != "READY" {
					return fmt.Errorf("add_sub, loaded, has state %q, want \"READY\"", m.State)
				}
			}
			for _, m := range indexed(list, "broken") {
				if m.State == "READY" || m.Reason == "" {
					return fmt.Errorf("broken, never loaded, has state %q and reason %q; want a state other than READY and a reason", m.State, m.Reason)
				}
			}
			return nil
		}))
	})

	neverReadyRepoSpec() // a model that never becomes ready (notready.go)

	It("answers a malformed index request with an error status and {\"error\": string}", Req("OIP-EXT-REPO-006"), func(ctx SpecContext) {
		AfterNegative()
		Verify(repoPost(ctx, "/v2/repository/index", `{"ready":"yes"}`)).To(BeErrorResponse())
	})

	It("answers an index request whose body is not JSON with an error status and {\"error\": string}", Req("OIP-EXT-REPO-006"), func(ctx SpecContext) {
		AfterNegative()
		Verify(repoPost(ctx, "/v2/repository/index", `{"ready":`)).To(BeErrorResponse())
	})

	It("loads an unloaded model again", Req("OIP-EXT-REPO-007"), func(ctx SpecContext) {
		NeedFixture("repo_target")
		restoreRepoTarget()
		if !Verify(repoPost(ctx, unloadPath("repo_target"), "")).To(HaveStatus(http.StatusOK), "repo_target must unload for its load to be checked") {
			return
		}
		if !Verify(repoPost(ctx, loadPath("repo_target"), "")).To(HaveStatus(http.StatusOK)) {
			return
		}
		Verify(Get(ctx, "/v2/models/repo_target/ready")).To(HaveStatus(http.StatusOK), "a loaded model is ready")
	})

	It("refuses file: contents without a config, and loads with the model's own config", Req("OIP-EXT-REPO-008"), func(ctx SpecContext) {
		NeedFixture("repo_target")
		restoreRepoTarget()
		AfterNegative()
		Verify(repoPost(ctx, loadPath("repo_target"), `{"parameters":{"file:1/model.onnx":"AAAA"}}`)).To(BeErrorResponse())
		if !Advertises(specs.ExtModelConfiguration) {
			return // the model's own configuration cannot be read
		}
		cfg := Get(ctx, "/v2/models/repo_target/config")
		if cfg.Err != nil || cfg.Status != http.StatusOK {
			return
		}
		body := `{"parameters":{"config":` + strconv.Quote(string(cfg.Body)) + `}}`
		if Verify(repoPost(ctx, loadPath("repo_target"), body)).To(HaveStatus(http.StatusOK), "a load with the model's own configuration as config succeeds") {
			Verify(Get(ctx, "/v2/models/repo_target/ready")).To(HaveStatus(http.StatusOK), "a loaded model is ready")
		}
	})

	It("answers a load of an unknown model with an error status and {\"error\": string}", Req("OIP-EXT-REPO-009"), func(ctx SpecContext) {
		AfterNegative()
		Verify(repoPost(ctx, loadPath("does_not_exist"), "")).To(BeErrorResponse())
	})

	It("answers a load whose body is not JSON with an error status and {\"error\": string}", Req("OIP-EXT-REPO-009"), func(ctx SpecContext) {
		NeedFixture("repo_target")
		restoreRepoTarget()
		AfterNegative()
		// A server whose load reads no body (MLServer's) loads anyway: the
		// client broke the JSON rule, and stock clients never send this, so
		// an accepted load is a warning; a 5xx still fails.
		refusedOrAccepted(repoPost(ctx, loadPath("repo_target"), `{"parameters":`), unreadLoadBody)
	})

	It("answers a load whose parameters is not an object with an error status and {\"error\": string}", Req("OIP-EXT-REPO-009"), func(ctx SpecContext) {
		NeedFixture("repo_target")
		restoreRepoTarget()
		AfterNegative()
		refusedOrAccepted(repoPost(ctx, loadPath("repo_target"), `{"parameters":"config"}`), unreadLoadBody)
	})

	It("unloads a model: it is no longer ready and refuses inference", Req("OIP-EXT-REPO-010"), func(ctx SpecContext) {
		NeedFixture("repo_target")
		restoreRepoTarget()
		if !Verify(repoPost(ctx, unloadPath("repo_target"), "")).To(HaveStatus(http.StatusOK)) {
			return
		}
		notReady(Get(ctx, "/v2/models/repo_target/ready"), "")
		in := int32s("INPUT0", []int64{1, 2}, 1, 2)
		Verify(Post(ctx, "repo_target", "", Request(JSONInput(in)))).To(BeErrorResponse())
	})

	It("unloads with unload_dependents when the server advertises it", Req("OIP-EXT-REPO-011"), func(ctx SpecContext) {
		NeedFixture("repo_target")
		if !advertisesCapability(ctx, specs.ExtModelRepository, "unload_dependents") {
			Skip(SkipNotApplicable + "the server does not advertise model_repository(unload_dependents)")
		}
		restoreRepoTarget()
		// The fixtures have no ensemble; a model without dependents is
		// unloaded as without the flag.
		if Verify(repoPost(ctx, unloadPath("repo_target"), `{"parameters":{"unload_dependents":true}}`)).To(HaveStatus(http.StatusOK)) {
			notReady(Get(ctx, "/v2/models/repo_target/ready"), "")
		}
	})

	It("answers a malformed unload with an error status and {\"error\": string}", Req("OIP-EXT-REPO-012"), func(ctx SpecContext) {
		NeedFixture("repo_target")
		restoreRepoTarget()
		AfterNegative()
		Verify(repoPost(ctx, unloadPath("repo_target"), `{"parameters":{"unload_dependents":"x"}}`)).
			Soft("the catalog's test is soft: only Triton's boolean parse fails it").To(BeErrorResponse())
	})

	It("answers an unload of an unknown model with an error status and {\"error\": string}", Req("OIP-EXT-REPO-012"), func(ctx SpecContext) {
		AfterNegative()
		// Whether unloading a model that is not loaded "fails" is not said:
		// Triton treats it as a no-op and answers 200. A success is a
		// warning; a 5xx still fails.
		refusedOrAccepted(repoPost(ctx, unloadPath("does_not_exist"), ""), unloadUnknown)
	})
})

// The softened readings of the repository's error rules: what the
// extension leaves open, graded as warnings (a 5xx is still a fault).
const (
	unloadUnknown  = "the extension does not say that unloading a model that is not loaded fails (Triton: a no-op answered 200)"
	unreadLoadBody = "a server whose load reads no body (MLServer) cannot fail on it; no stock client sends a malformed load body"
)

// refusedOrAccepted checks a request the server should refuse where the
// extension leaves a success open (why): a success is a warning, while a
// 5xx is still a fault and a refusal still needs {"error": string}.
func refusedOrAccepted(e *Exchange, why string) {
	if e.Err == nil && e.Status < 400 {
		Verify(e).Soft(why).To(BeErrorResponse())
		return
	}
	Verify(e).To(BeErrorResponse())
}

// advertisesCapability reports whether server metadata lists ext with cap,
// over either transport.
func advertisesCapability(ctx context.Context, ext specs.Extension, capability string) bool {
	var names []string
	if Targeted(TransportREST) {
		if o, err := Get(ctx, "/v2").AsObject(); err == nil {
			names, _ = extensionsField(o.Members)
		}
	} else if r, c := Invoke(ctx, "ServerMetadata", &pb.ServerMetadataRequest{}, Stub().ServerMetadata); c.Err == nil {
		names = r.GetExtensions()
	}
	for _, n := range names {
		if e, c, ok := specs.ParseAdvertised(n); ok && e == ext && c == capability {
			return true
		}
	}
	return false
}

var _ = Describe("gRPC model repository", Over(TransportGRPC), Needs(specs.ExtModelRepository), func() {
	It("advertises model_repository in server metadata", Req("OIP-EXT-REPO-001"), func(ctx SpecContext) {
		_, c := Invoke(ctx, "ServerMetadata", &pb.ServerMetadataRequest{}, Stub().ServerMetadata)
		Verify(c).To(PassCheck(func(m *pb.ServerMetadataResponse) error {
			return advertisedErr(m.GetExtensions(), specs.ExtModelRepository)
		}))
	})

	It("answers RepositoryIndex with every model, and only the ready ones when ready is set", Req("OIP-EXT-REPO-013"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		NeedFixture("repo_target")
		names := func(r *pb.RepositoryIndexResponse) map[string]bool {
			m := map[string]bool{}
			for _, x := range r.GetModels() {
				m[x.GetName()] = true
			}
			return m
		}
		_, c := Invoke(ctx, "RepositoryIndex", &pb.RepositoryIndexRequest{}, Stub().RepositoryIndex)
		Verify(c).To(PassCheck(func(r *pb.RepositoryIndexResponse) error {
			if n := names(r); !n["add_sub"] || !n["repo_target"] {
				return fmt.Errorf("RepositoryIndex lists %v, want add_sub and repo_target among them", clipped(fmt.Sprint(n), 200))
			}
			return nil
		}))
		_, c = Invoke(ctx, "RepositoryIndex", &pb.RepositoryIndexRequest{Ready: true}, Stub().RepositoryIndex)
		Verify(c).To(PassCheck(func(r *pb.RepositoryIndexResponse) error {
			n := names(r)
			switch {
			case !n["add_sub"]:
				return errors.New("RepositoryIndex{ready: true} does not list add_sub, which is ready")
			case n["broken"]:
				return errors.New("RepositoryIndex{ready: true} lists broken, which never loads")
			}
			return nil
		}))
	})

	It("unloads and loads a model with RepositoryModelUnload and RepositoryModelLoad", Req("OIP-EXT-REPO-013"), func(ctx SpecContext) {
		NeedFixture("repo_target")
		restoreRepoTarget()
		_, c := Invoke(ctx, "RepositoryModelUnload", &pb.RepositoryModelUnloadRequest{ModelName: "repo_target"}, Stub().RepositoryModelUnload)
		if !Verify(c).To(BeOK()) {
			return
		}
		r, c := Invoke(ctx, "ModelReady", &pb.ModelReadyRequest{Name: "repo_target"}, Stub().ModelReady)
		if Answered(c) && c.Err == nil {
			Verify(c).To(PassCheck(func(*pb.ModelReadyResponse) error {
				if r.GetReady() {
					return errors.New("ModelReady{repo_target} is true after RepositoryModelUnload")
				}
				return nil
			}))
		}
		_, c = Invoke(ctx, "RepositoryModelLoad", &pb.RepositoryModelLoadRequest{ModelName: "repo_target"}, Stub().RepositoryModelLoad)
		if !Verify(c).To(BeOK()) {
			return
		}
		_, c = Invoke(ctx, "ModelReady", &pb.ModelReadyRequest{Name: "repo_target"}, Stub().ModelReady)
		Verify(c).To(PassCheck(func(r *pb.ModelReadyResponse) error {
			if !r.GetReady() {
				return errors.New("ModelReady{repo_target} is false after RepositoryModelLoad")
			}
			return nil
		}))
	})

	It("answers a load of an unknown model with a non-OK status", Req("OIP-EXT-REPO-013"), func(ctx SpecContext) {
		AfterNegative()
		_, c := Invoke(ctx, "RepositoryModelLoad", &pb.RepositoryModelLoadRequest{ModelName: "does_not_exist"}, Stub().RepositoryModelLoad)
		if Answered(c) {
			Verify(c).To(BeRejected())
		}
	})

	It("answers an unload of an unknown model with a non-OK status", Req("OIP-EXT-REPO-013"), func(ctx SpecContext) {
		AfterNegative()
		_, c := Invoke(ctx, "RepositoryModelUnload", &pb.RepositoryModelUnloadRequest{ModelName: "does_not_exist"}, Stub().RepositoryModelUnload)
		if Answered(c) {
			if c.Err == nil {
				Verify(c).Soft(unloadUnknown).To(BeRejected())
			} else {
				Verify(c).To(BeRejected()) // INTERNAL or UNKNOWN is still a fault
			}
		}
	})
})

// A load that fails can leave a server not ready for good: Triton's strict
// readiness counts the failed model until it loads, and unloading it does not
// take that back. The specs that try to load broken therefore run after every
// other spec (RunsLast), so no readiness check of another spec sees it.
var _ = Describe("REST model repository, a load that fails", RunsLast, Over(TransportREST), Needs(specs.ExtModelRepository), func() {
	It("answers a load that fails with an error status and {\"error\": string}", Req("OIP-EXT-REPO-009"), func(ctx SpecContext) {
		needBroken(ctx)
		takeBackBroken()
		AfterNegative()
		// broken's artifacts are missing on the server: the load fails on
		// the server's side, so a 5xx is an honest answer here.
		if e := repoPost(ctx, loadPath("broken"), ""); Verify(e).To(BeFailedRequest()) {
			Verify(e).To(HaveErrorBody())
		}
	})
})

var _ = Describe("gRPC model repository, a load that fails", RunsLast, Over(TransportGRPC), Needs(specs.ExtModelRepository), func() {
	It("answers a load that fails with a non-OK status", Req("OIP-EXT-REPO-013"), func(ctx SpecContext) {
		needBrokenGRPC(ctx)
		takeBackBroken()
		AfterNegative()
		_, c := Invoke(ctx, "RepositoryModelLoad", &pb.RepositoryModelLoadRequest{ModelName: "broken"}, Stub().RepositoryModelLoad)
		if Answered(c) {
			Verify(c).To(BeFailedRequest()) // a failure on the server's side: INTERNAL is honest
		}
	})
})
