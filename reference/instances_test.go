package reference_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference"
	"github.com/oipkit/oipkit/reference/model"
	"github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// heldModel answers INPUT0 as OUTPUT0 once the test releases it, and
// counts the executions running at once.
type heldModel struct {
	release           chan struct{}
	running, maxSeen  atomic.Int64
	started, finished atomic.Int64
}

func newHeldModel() *heldModel { return &heldModel{release: make(chan struct{})} }

func (m *heldModel) Metadata() oip.ModelMetadata {
	return oip.ModelMetadata{
		Name: "held", Versions: []string{"1"}, Platform: "oipkit",
		Inputs:  []oip.TensorMetadata{{Name: "INPUT0", Datatype: tensor.Int32, Shape: []int64{1}}},
		Outputs: []oip.TensorMetadata{{Name: "OUTPUT0", Datatype: tensor.Int32, Shape: []int64{1}}},
	}
}

func (m *heldModel) Infer(ctx context.Context, inputs map[string]tensor.Tensor, _ oip.Parameters) ([]tensor.Tensor, error) {
	n := m.running.Add(1)
	defer m.running.Add(-1)
	for {
		old := m.maxSeen.Load()
		if n <= old || m.maxSeen.CompareAndSwap(old, n) {
			break
		}
	}
	m.started.Add(1)
	select {
	case <-m.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	m.finished.Add(1)
	out := inputs["INPUT0"]
	out.Name = "OUTPUT0"
	return []tensor.Tensor{out}, nil
}

func heldRequest(params oip.Parameters) *oip.InferRequest {
	in := tensor.Tensor{Name: "INPUT0", Datatype: tensor.Int32, Shape: []int64{1}, Data: []int32{7}}
	return &oip.InferRequest{Model: "held", Inputs: []oip.InferInput{{Tensor: in}}, Parameters: params}
}

func startHeld(t *testing.T, instances map[string]int) (*reference.Server, *heldModel) {
	t.Helper()
	m := newHeldModel()
	repo := model.NewRepository()
	if err := repo.Add(m); err != nil {
		t.Fatal(err)
	}
	srv := startWith(t, repo, func(c *reference.Config) { c.Instances = instances })
	return srv, m
}

// inflight reads the server's oip_inflight_requests gauge.
func inflight(t *testing.T, base string) int {
	t.Helper()
	for _, line := range strings.Split(string(get(t, base+"/metrics").body), "\n") {
		if v, ok := strings.CutPrefix(line, "oip_inflight_requests "); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatalf("oip_inflight_requests %q: %v", v, err)
			}
			return n
		}
	}
	t.Fatal("/metrics has no oip_inflight_requests")
	return 0
}

// waitFor polls cond until it holds (a deadline of the test's, not a
// timing assertion).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// With two instances, five requests at once run two at a time, the others
// wait in the queue, and the statistics count that wait as queue time.
func TestInstancesLimitExecutions(t *testing.T) {
	srv, m := startHeld(t, map[string]int{"held": 2})
	base := srv.HTTPURL()
	const n = 5
	var wg sync.WaitGroup
	statuses := make([]int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, r := inferREST(t, base, heldRequest(nil), oip.RESTEncoding{})
			statuses[i] = r.status
		}()
	}
	// Every request reached the server: two run, three wait.
	waitFor(t, "5 requests in flight", func() bool { return inflight(t, base) == n })
	waitFor(t, "2 executions", func() bool { return m.started.Load() == 2 })
	if got := m.maxSeen.Load(); got != 2 {
		t.Fatalf("with 5 requests in flight and 2 instances, %d executions ran at once; want 2", got)
	}
	for range n {
		m.release <- struct{}{}
	}
	wg.Wait()
	for i, s := range statuses {
		if s != http.StatusOK {
			t.Errorf("request %d: status %d", i, s)
		}
	}
	if got := m.maxSeen.Load(); got != 2 {
		t.Errorf("%d executions ran at once; want at most 2", got)
	}

	var stats oip.StatisticsResponse
	wantJSON(t, get(t, base+"/v2/models/held/stats"), http.StatusOK, &stats)
	is := stats.ModelStats[0].InferenceStats
	if is.Success.Count != n || is.Queue.Count != n {
		t.Fatalf("statistics: success %d, queue %d; want %d each", is.Success.Count, is.Queue.Count, n)
	}
	if is.Queue.NS == 0 {
		t.Error("three requests waited for an instance, yet the queue time is 0")
	}
	if is.Queue.NS > is.Success.NS {
		t.Errorf("queue time %d ns exceeds the requests' total %d ns", is.Queue.NS, is.Success.NS)
	}

	// The model configuration says how many instances the model has.
	var cfg struct {
		InstanceGroup []struct {
			Kind  string `json:"kind"`
			Count int    `json:"count"`
		} `json:"instance_group"`
	}
	wantJSON(t, get(t, base+"/v2/models/held/config"), http.StatusOK, &cfg)
	if len(cfg.InstanceGroup) != 1 || cfg.InstanceGroup[0].Count != 2 || cfg.InstanceGroup[0].Kind != "KIND_CPU" {
		t.Errorf("config instance_group %+v; want one KIND_CPU group of 2", cfg.InstanceGroup)
	}
	pc, err := dial(t, srv.GRPCAddr()).ModelConfig(ctxT(t), &inferencepb.ModelConfigRequest{Name: "held"})
	if err != nil {
		t.Fatal(err)
	}
	if g := pc.GetConfig().GetInstanceGroup(); len(g) != 1 || g[0].GetCount() != 2 {
		t.Errorf("gRPC config instance_group %v; want a group of 2", g)
	}
}

// A request whose schedule_policy timeout expires in the queue fails as a
// timeout, and the instance it waited for still serves the next request.
func TestInstancesQueueTimeout(t *testing.T) {
	srv, m := startHeld(t, map[string]int{"held": 1})
	base := srv.HTTPURL()
	first := make(chan int, 1)
	go func() {
		_, r := inferREST(t, base, heldRequest(nil), oip.RESTEncoding{})
		first <- r.status
	}()
	waitFor(t, "the first execution", func() bool { return m.started.Load() == 1 })
	_, r := inferREST(t, base, heldRequest(oip.Parameters{"timeout": int64(1000)}), oip.RESTEncoding{})
	wantError(t, r, http.StatusGatewayTimeout, "queue", "instances")
	_, err := dial(t, srv.GRPCAddr()).ModelInfer(ctxT(t), &inferencepb.ModelInferRequest{
		ModelName: "held",
		Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "INPUT0", Datatype: "INT32", Shape: []int64{1},
			Contents: &inferencepb.InferTensorContents{IntContents: []int32{7}}}},
		Parameters: map[string]*inferencepb.InferParameter{"timeout": {ParameterChoice: &inferencepb.InferParameter_Int64Param{Int64Param: 1000}}},
	})
	wantCode(t, err, codes.DeadlineExceeded, "queue")
	m.release <- struct{}{}
	if s := <-first; s != http.StatusOK {
		t.Fatalf("the request holding the instance: %d", s)
	}
	go func() { m.release <- struct{}{} }()
	if _, r := inferREST(t, base, heldRequest(nil), oip.RESTEncoding{}); r.status != http.StatusOK {
		t.Fatalf("a request after the timed-out ones: %d %s", r.status, r.body)
	}
	if got := m.maxSeen.Load(); got != 1 {
		t.Errorf("%d executions ran at once with one instance", got)
	}
}

// A configuration override's instance_group sets the instances for that
// load; a load without one goes back to the server's configuration.
func TestInstancesFromLoadConfig(t *testing.T) {
	srv, _ := startHeld(t, nil)
	base := srv.HTTPURL()
	count := func() int {
		var cfg struct {
			InstanceGroup []struct {
				Count int `json:"count"`
			} `json:"instance_group"`
		}
		wantJSON(t, get(t, base+"/v2/models/held/config"), http.StatusOK, &cfg)
		n := 0
		for _, g := range cfg.InstanceGroup {
			n += g.Count
		}
		return n
	}
	if n := count(); n != 0 {
		t.Fatalf("a model without a limit lists %d instances", n)
	}
	load := func(config string) httpResult {
		body, _ := json.Marshal(map[string]any{"parameters": map[string]any{"config": config}})
		return post(t, base+"/v2/repository/models/held/load", string(body))
	}
	if r := load(`{"instance_group":[{"count":2,"kind":"KIND_CPU"},{"count":1}]}`); r.status != http.StatusOK {
		t.Fatalf("load with instance_group: %d %s", r.status, r.body)
	}
	if n := count(); n != 3 {
		t.Errorf("after a load with groups of 2 and 1: %d instances; want 3", n)
	}
	wantError(t, load(`{"instance_group":[{"count":-1}]}`), http.StatusBadRequest, "instance_group")
	if n := count(); n != 3 {
		t.Errorf("a refused load changed the instances to %d", n)
	}
	if r := post(t, base+"/v2/repository/models/held/load", `{}`); r.status != http.StatusOK {
		t.Fatalf("load: %d %s", r.status, r.body)
	}
	if n := count(); n != 0 {
		t.Errorf("a load without a configuration kept %d instances; want the server's (none)", n)
	}
}

func TestInstancesConfig(t *testing.T) {
	cfg := reference.DefaultConfig()
	cfg.HTTPAddr, cfg.GRPCAddr = "127.0.0.1:0", ""
	cfg.Instances = map[string]int{"no_such_model": 1}
	if _, err := reference.New(cfg, nil); err == nil || !strings.Contains(err.Error(), "no_such_model") {
		t.Errorf("instances of a model the server does not have: %v", err)
	}
	for _, bad := range []string{"delay", "delay=0", "delay=x", "=2", "delay=-1", "delay=99999999"} {
		if _, err := reference.ParseInstances(bad); err == nil {
			t.Errorf("ParseInstances(%q) accepted it", bad)
		}
	}
	got, err := reference.ParseInstances("delay=1, add_sub=4")
	if err != nil || got["delay"] != 1 || got["add_sub"] != 4 || len(got) != 2 {
		t.Errorf("ParseInstances: %v, %v", got, err)
	}
}
