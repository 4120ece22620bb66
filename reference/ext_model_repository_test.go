package reference_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference"
	"github.com/oipkit/oipkit/reference/referencetest"
	"github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

type indexEntry struct {
	Name, Version, State, Reason string
}

func repositoryIndex(t *testing.T, base, body string) map[string]indexEntry {
	t.Helper()
	var list []indexEntry
	wantJSON(t, post(t, base+"/v2/repository/index", body), http.StatusOK, &list)
	m := map[string]indexEntry{}
	for _, e := range list {
		m[e.Name] = e
	}
	return m
}

func repoTargetRequest() *oip.InferRequest {
	in := tensor.Tensor{Name: "INPUT0", Datatype: tensor.Int32, Shape: []int64{1, 2}, Data: []int32{7, 8}}
	return &oip.InferRequest{Model: "repo_target", Inputs: []oip.InferInput{{Tensor: in}}}
}

func TestModelRepositoryREST(t *testing.T) {
	srv := referencetest.Start(t)
	base := srv.HTTPURL()
	idx := repositoryIndex(t, base, "")
	if idx["repo_target"].State != "READY" || idx["add_sub"].State != "READY" {
		t.Errorf("index: repo_target %+v, add_sub %+v; want READY", idx["repo_target"], idx["add_sub"])
	}
	if b := idx["broken"]; b.State != "UNAVAILABLE" || b.Reason == "" {
		t.Errorf("index: broken %+v, want UNAVAILABLE with a reason", b)
	}
	if _, listed := repositoryIndex(t, base, `{"ready":true}`)["broken"]; listed {
		t.Error(`{"ready":true} lists broken`)
	}
	wantError(t, post(t, base+"/v2/repository/index", `{"ready":"yes"}`), http.StatusBadRequest)
	wantError(t, post(t, base+"/v2/repository/index", `[`), http.StatusBadRequest)

	// Unload: listed, not ready, every model call fails.
	if r := post(t, base+"/v2/repository/models/repo_target/unload", `{"parameters":{"unload_dependents":true}}`); r.status != http.StatusOK {
		t.Fatalf("unload: %d %s", r.status, r.body)
	}
	if e := repositoryIndex(t, base, "")["repo_target"]; e.State != "UNAVAILABLE" || e.Reason != "unloaded" {
		t.Errorf("index after unload: %+v", e)
	}
	wantError(t, get(t, base+"/v2/models/repo_target/ready"), http.StatusNotFound)
	wantError(t, get(t, base+"/v2/models/repo_target"), http.StatusNotFound)
	if _, r := inferREST(t, base, repoTargetRequest(), oip.RESTEncoding{}); r.status != http.StatusNotFound {
		t.Errorf("inference of an unloaded model: %d %s", r.status, r.body)
	}
	if r := get(t, base+"/v2/health/ready"); r.status != http.StatusOK {
		t.Errorf("server ready after an unload: %d", r.status)
	}
	// Load again, with its own configuration as an override.
	wantError(t, post(t, base+"/v2/repository/models/add_sub/load", `{"parameters":{"config":`+strconv.Quote(`{"name":"repo_target"}`)+`}}`), http.StatusBadRequest, "add_sub")
	wantError(t, post(t, base+"/v2/repository/models/repo_target/load", `{"parameters":{"config":"{not json"}}`), http.StatusBadRequest)
	wantError(t, post(t, base+"/v2/repository/models/repo_target/load", `{"parameters":{"file:1/model.onnx":"AAAA"}}`), http.StatusBadRequest, "config")
	if r := post(t, base+"/v2/repository/models/repo_target/load", `{"parameters":{"config":`+strconv.Quote(`{"name":"repo_target","input":[{"name":"INPUT0","data_type":"TYPE_INT32","dims":[-1,-1]}]}`)+`}}`); r.status != http.StatusOK {
		t.Fatalf("load with a config override: %d %s", r.status, r.body)
	}
	if r := post(t, base+"/v2/repository/models/repo_target/load", `{"parameters":{"config":`+strconv.Quote(`{"input":[{"name":"INPUT0","data_type":"TYPE_FP32"}]}`)+`}}`); r.status != http.StatusBadRequest {
		t.Errorf("load with a config of the wrong datatype: %d %s", r.status, r.body)
	}
	if resp, r := inferREST(t, base, repoTargetRequest(), oip.RESTEncoding{}); r.status != http.StatusOK || resp.Outputs[0].Name != "OUTPUT0" {
		t.Errorf("inference after load: %d %s", r.status, r.body)
	}

	// broken: the load fails, the server is not ready until it is unloaded.
	wantError(t, post(t, base+"/v2/repository/models/broken/load", ""), http.StatusBadRequest, "broken")
	if r := get(t, base+"/v2/health/ready"); r.status != http.StatusBadRequest {
		t.Errorf("server ready after a failed load: %d, want 400", r.status)
	}
	if e := repositoryIndex(t, base, "")["broken"]; e.State != "UNAVAILABLE" || e.Reason == "" {
		t.Errorf("broken after its load failed: %+v", e)
	}
	post(t, base+"/v2/repository/models/broken/unload", "")
	if r := get(t, base+"/v2/health/ready"); r.status != http.StatusOK {
		t.Errorf("server ready after broken is unloaded: %d", r.status)
	}
	wantError(t, post(t, base+"/v2/repository/models/does_not_exist/load", ""), http.StatusNotFound)
	wantError(t, post(t, base+"/v2/repository/models/repo_target/unload", `{"parameters":{"unload_dependents":"x"}}`), http.StatusBadRequest)
	r := get(t, base+"/v2/repository/models/repo_target/load")
	wantError(t, r, http.StatusMethodNotAllowed)
	if r.header.Get("Allow") != "POST" {
		t.Errorf("Allow %q", r.header.Get("Allow"))
	}
}

func TestModelRepositoryGRPC(t *testing.T) {
	srv := referencetest.Start(t)
	c := dial(t, srv.GRPCAddr())
	ctx := ctxT(t)
	idx, err := c.RepositoryIndex(ctx, &inferencepb.RepositoryIndexRequest{})
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, m := range idx.GetModels() {
		states[m.GetName()] = m.GetState()
	}
	if states["repo_target"] != "READY" || states["broken"] != "UNAVAILABLE" {
		t.Errorf("index states %v", states)
	}
	if _, err := c.RepositoryModelUnload(ctx, &inferencepb.RepositoryModelUnloadRequest{ModelName: "repo_target"}); err != nil {
		t.Fatal(err)
	}
	_, err = c.ModelMetadata(ctx, &inferencepb.ModelMetadataRequest{Name: "repo_target"})
	wantCode(t, err, codes.NotFound)
	if _, err := c.RepositoryModelLoad(ctx, &inferencepb.RepositoryModelLoadRequest{ModelName: "repo_target"}); err != nil {
		t.Fatal(err)
	}
	if r, err := c.ModelReady(ctx, &inferencepb.ModelReadyRequest{Name: "repo_target"}); err != nil || !r.GetReady() {
		t.Errorf("ModelReady after load: %v, %v", r, err)
	}
	_, err = c.RepositoryModelLoad(ctx, &inferencepb.RepositoryModelLoadRequest{ModelName: "broken"})
	wantCode(t, err, codes.InvalidArgument, "broken")
	if r, err := c.ServerReady(ctx, &inferencepb.ServerReadyRequest{}); err != nil || r.GetReady() {
		t.Errorf("ServerReady after a failed load: %v, %v; want ready false", r, err)
	}
	c.RepositoryModelUnload(ctx, &inferencepb.RepositoryModelUnloadRequest{ModelName: "broken"})
	_, err = c.RepositoryModelLoad(ctx, &inferencepb.RepositoryModelLoadRequest{ModelName: "repo_target", Parameters: map[string]*inferencepb.ModelRepositoryParameter{
		"file:1/model.onnx": {ParameterChoice: &inferencepb.ModelRepositoryParameter_BytesParam{BytesParam: []byte{1}}}}})
	wantCode(t, err, codes.InvalidArgument, "config")
	_, err = c.RepositoryModelUnload(ctx, &inferencepb.RepositoryModelUnloadRequest{ModelName: "repo_target", Parameters: map[string]*inferencepb.ModelRepositoryParameter{
		"unload_dependents": {ParameterChoice: &inferencepb.ModelRepositoryParameter_StringParam{StringParam: "x"}}}})
	wantCode(t, err, codes.InvalidArgument)
}

// Loads and unloads race with inferences on the same model: each inference
// either runs or is refused as not found, and nothing else happens.
func TestModelRepositoryConcurrent(t *testing.T) {
	srv := referencetest.Start(t)
	c := dial(t, srv.GRPCAddr())
	ctx := ctxT(t)
	pbReq, err := oip.ToProtoRequest(repoTargetRequest(), false)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 50 {
			c.RepositoryModelUnload(ctx, &inferencepb.RepositoryModelUnloadRequest{ModelName: "repo_target"})
			c.RepositoryModelLoad(ctx, &inferencepb.RepositoryModelLoadRequest{ModelName: "repo_target"})
		}
	}()
	for i := 0; ; i++ {
		select {
		case <-done:
			if _, err := c.ModelInfer(ctx, pbReq); err != nil {
				t.Fatalf("inference after the last load: %v", err)
			}
			return
		default:
		}
		if _, err := c.ModelInfer(ctx, pbReq); err != nil && statusCode(err) != codes.NotFound {
			t.Fatalf("inference %d: %v", i, err)
		}
		c.RepositoryIndex(ctx, &inferencepb.RepositoryIndexRequest{})
	}
}

// Malformed repository and statistics requests are refused with 4xx: deep
// nesting, a body over the limit, a config that is JSON of the wrong shape.
func TestExtensionRoutesHostile(t *testing.T) {
	srv := referencetest.Start(t, func(c *reference.Config) { c.MaxBodyBytes = 1 << 16 })
	base := srv.HTTPURL()
	deep := strings.Repeat("[", 20000)
	for _, c := range []struct {
		path, body string
		status     int
	}{
		{"/v2/repository/index", deep, http.StatusBadRequest},
		{"/v2/repository/index", `{"ready":` + deep + `}`, http.StatusBadRequest},
		{"/v2/repository/index", `{"ready":true}` + strings.Repeat(" ", 1<<17), http.StatusRequestEntityTooLarge},
		{"/v2/repository/models/repo_target/load", `{"parameters":{"config":` + strconv.Quote(deep) + `}}`, http.StatusBadRequest},
		{"/v2/repository/models/repo_target/load", `{"parameters":{"config":"[1,2]"}}`, http.StatusBadRequest},
		{"/v2/repository/models/repo_target/load", `{"parameters":{"config":42}}`, http.StatusBadRequest},
		{"/v2/repository/models/repo_target/load", `{"parameters":"x"}`, http.StatusBadRequest},
		{"/v2/repository/models/repo_target/unload", `{"parameters":[]}`, http.StatusBadRequest},
	} {
		if r := post(t, base+c.path, c.body); r.status != c.status {
			t.Errorf("POST %s with %.40q…: %d, want %d (%s)", c.path, c.body, r.status, c.status, r.body)
		}
	}
	if r := get(t, base+"/v2/health/ready"); r.status != http.StatusOK {
		t.Errorf("server not ready after malformed requests: %d", r.status)
	}
	if r := get(t, base+"/v2/models/"+strings.Repeat("x", 4000)+"/stats"); r.status != http.StatusNotFound {
		t.Errorf("statistics of a long unknown name: %d", r.status)
	}
}
