package report

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// received is what the recording server saw of one request.
type received struct {
	method, uri string
	header      http.Header
	body        []byte
}

// recordingServer answers 200 to everything and hands each request over.
func recordingServer(t *testing.T) (string, <-chan received) {
	t.Helper()
	got := make(chan received, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- received{r.Method, r.RequestURI, r.Header.Clone(), b}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, got
}

// runShell runs a reproducer the way a reader pastes it.
func runShell(t *testing.T, shell, cmd string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, shell, "-c", cmd)
	c.Dir = "../.." // the repository's root: grpcurl finds specs/proto from there
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("%s -c failed: %v\n%s\ncommand:\n%s", shell, err, out, cmd)
	}
}

func allBytes() []byte {
	b := make([]byte, 0, 512)
	for i := range 512 {
		b = append(b, byte(i))
	}
	return b
}

// TestCurlReproducerRoundTrip runs each generated curl command in a shell
// against a server that records the request, and compares it with what
// the report says was sent, byte for byte.
func TestCurlReproducerRoundTrip(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	tricky := "{\"s\":\"it's 100% \\\\ \\\"q\\\" $HOME `id` é\ttab\"}\n\n"
	head := `{"inputs":[{"name":"INPUT0","datatype":"UINT8","shape":[1,512],"parameters":{"binary_data_size":512}}]}`
	tail := allBytes()
	cases := []struct {
		name   string
		req    Message
		exact  []byte // the body for ReproduceExact; nil: from the evidence
		want   []byte // the body the server must see
		header http.Header
	}{
		{name: "json with quotes, percent, backslash, newlines", want: []byte(tricky),
			req:    Message{Method: "POST", Target: "/v2/models/add_sub/infer", Header: map[string][]string{"Content-Type": {"application/json"}}, Body: tricky, BodyBytes: len(tricky)},
			header: http.Header{"Content-Type": {"application/json"}}},
		{name: "every byte value, exact", exact: allBytes(), want: allBytes(),
			req:    Message{Method: "POST", Target: "/v2/models/identity_uint8/infer", Header: map[string][]string{"Content-Type": {"application/octet-stream"}}, Body: "[512 bytes, not text] …", BodyBytes: 512},
			header: http.Header{"Content-Type": {"application/octet-stream"}}},
		{name: "not text, from the evidence's hex", want: []byte{0, 1, 2, 0xff, '\'', '%', '\\'},
			req: Message{Method: "POST", Target: "/v2/models/add_sub/infer", Header: map[string][]string{"Content-Type": {"application/json"}},
				Body: "[7 bytes, not text] " + hex.EncodeToString([]byte{0, 1, 2, 0xff, '\'', '%', '\\'}), BodyBytes: 7}},
		{name: "binary extension, from the evidence's header and tail", want: append([]byte(head), tail...),
			req: Message{Method: "POST", Target: "/v2/models/identity_uint8/infer",
				Header: map[string][]string{"Content-Type": {"application/octet-stream"}, "Inference-Header-Content-Length": {fmt.Sprint(len(head))}},
				Body:   head + "\n[binary tail, 512 bytes] " + hex.EncodeToString(tail), BodyBytes: len(head) + 512},
			header: http.Header{"Inference-Header-Content-Length": {fmt.Sprint(len(head))}}},
		{name: "body without a content type", want: []byte("{}"),
			req: Message{Method: "POST", Target: "/v2/models/add_sub/infer", Body: "{}", BodyBytes: 2}},
		{name: "empty POST", want: []byte{},
			req:    Message{Method: "POST", Target: "/v2/repository/models/add_sub/load", Header: map[string][]string{"Content-Type": {"application/json"}, "X-Empty": {""}}},
			header: http.Header{"Content-Type": {"application/json"}, "X-Empty": {""}, "Content-Length": {"0"}}},
		{name: "GET with brackets and dot segments", want: []byte{},
			req: Message{Method: "GET", Target: "/v2/models/a[1]/../b/ready?x={y}"}},
		{name: "DELETE", want: []byte{},
			req: Message{Method: "DELETE", Target: "/v2/models/add_sub"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, shell := range []string{"bash", "sh"} {
				url, got := recordingServer(t)
				ev := &Evidence{Request: c.req}
				cmd := Reproduce(ev, Targets{HTTP: url})
				if c.exact != nil {
					cmd = ReproduceExact(ev, Targets{HTTP: url}, c.exact)
				}
				if strings.HasPrefix(cmd, "#") {
					t.Fatalf("reproducer is marked not exact:\n%s", cmd)
				}
				runShell(t, shell, cmd)
				r := <-got
				if r.method != c.req.Method || r.uri != c.req.Target {
					t.Errorf("%s: server saw %s %s, want %s %s", shell, r.method, r.uri, c.req.Method, c.req.Target)
				}
				if string(r.body) != string(c.want) {
					t.Errorf("%s: server saw body %q, want %q\ncommand:\n%s", shell, r.body, c.want, cmd)
				}
				for k, v := range c.header {
					if got := r.header.Values(k); strings.Join(got, ",") != strings.Join(v, ",") || got == nil {
						t.Errorf("%s: header %s = %q, want %q", shell, k, got, v)
					}
				}
				if c.req.Header["Content-Type"] == nil && r.header.Get("Content-Type") != "" {
					t.Errorf("%s: curl sent Content-Type %q the suite did not", shell, r.header.Get("Content-Type"))
				}
			}
		})
	}
}

// TestReproducerSaysWhenNotExact: a body the report keeps cut short, or
// one over MaxReproducerBody, never makes a command that claims to send
// what the suite sent.
func TestReproducerSaysWhenNotExact(t *testing.T) {
	clipped := strings.Repeat("x", 4096) + "…"
	for name, cmd := range map[string]string{
		"clipped text": Reproduce(&Evidence{Request: Message{Method: "POST", Target: "/v2/models/m/infer", Body: clipped, BodyBytes: 4099}}, Targets{}),
		"clipped hex":  Reproduce(&Evidence{Request: Message{Method: "POST", Target: "/v2/models/m/infer", Body: "[600 bytes, not text] 0001…", BodyBytes: 600}}, Targets{}),
		"clipped rpc":  Reproduce(&Evidence{Request: Message{Method: "RPC", Target: "/inference.GRPCInferenceService/ModelInfer", Body: `{"modelName":"m","inputs":[…`}}, Targets{}),
		"too large":    ReproduceExact(&Evidence{Request: Message{Method: "POST", Target: "/v2/models/m/infer"}}, Targets{}, irregular(MaxReproducerBody+1)),
	} {
		if !strings.HasPrefix(cmd, "# NOT EXACT: ") {
			t.Errorf("%s: reproducer does not say it is not exact:\n%.300s", name, cmd)
		}
	}
	exact := Reproduce(&Evidence{Request: Message{Method: "POST", Target: "/v2/models/m/infer", Body: "{}", BodyBytes: 2}}, Targets{})
	if strings.Contains(exact, "NOT EXACT") || !strings.Contains(exact, "http://HOST:PORT/v2/models/m/infer") {
		t.Errorf("exact reproducer without a target:\n%s", exact)
	}
}

// inferRecorder is a gRPC server that records the ModelInfer request it gets.
type inferRecorder struct {
	pb.UnimplementedGRPCInferenceServiceServer
	got chan *pb.ModelInferRequest
}

func (s *inferRecorder) ModelInfer(_ context.Context, r *pb.ModelInferRequest) (*pb.ModelInferResponse, error) {
	s.got <- r
	return &pb.ModelInferResponse{ModelName: r.ModelName}, nil
}

// TestGRPCurlReproducerRoundTrip sends the generated grpcurl command to a
// server that records the message, when grpcurl is installed (make
// grpcurl); otherwise it checks that the here-document holds the message.
func TestGRPCurlReproducerRoundTrip(t *testing.T) {
	want := &pb.ModelInferRequest{
		ModelName: "add_sub", Id: "it's \"quoted\"\nEOF",
		Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "INPUT0", Datatype: "INT32", Shape: []int64{1, 2},
			Contents: &pb.InferTensorContents{IntContents: []int32{-1, 2}}}},
		RawInputContents: [][]byte{allBytes()},
	}
	body, err := protojson.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	ev := &Evidence{Request: Message{Method: "RPC", Target: "/inference.GRPCInferenceService/ModelInfer", Body: string(body)}}
	grpcurl, err := filepath.Abs("../../.tools/bin/grpcurl")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(grpcurl); err != nil {
		cmd := Reproduce(ev, Targets{GRPC: "127.0.0.1:1"})
		_, rest, ok := strings.Cut(cmd, " <<'")
		delim, doc, ok2 := strings.Cut(rest, "'\n")
		doc, ok3 := strings.CutSuffix(doc, "\n"+delim)
		if !ok || !ok2 || !ok3 || strings.HasPrefix(cmd, "#") {
			t.Fatalf("no here-document in:\n%s", cmd)
		}
		var got pb.ModelInferRequest
		if err := protojson.Unmarshal([]byte(doc), &got); err != nil || !proto.Equal(&got, want) {
			t.Fatalf("here-document %q reads as %v (%v), want %v", doc, &got, err, want)
		}
		t.Skip("grpcurl is not installed (make grpcurl): checked the here-document only")
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := &inferRecorder{got: make(chan *pb.ModelInferRequest, 1)}
	srv := grpc.NewServer()
	pb.RegisterGRPCInferenceServiceServer(srv, rec)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	cmd := Reproduce(ev, Targets{GRPC: lis.Addr().String()})
	runShell(t, "bash", strings.Replace(cmd, "grpcurl ", grpcurl+" ", 1))
	if got := <-rec.got; !proto.Equal(got, want) {
		t.Errorf("server got %v, want %v", got, want)
	}
}

// TestReproducerRendered: report.md and report.html carry each finding's
// reproducer, the stored one when the run stored it and one built from the
// evidence for an older report.
func TestReproducerRendered(t *testing.T) {
	r := sampleReport("kserve", StatusFailed)
	r.Targets = Targets{HTTP: "http://127.0.0.1:8000"}
	r.Requirements[0].Findings[0].Evidence.Request.BodyBytes = len(`{"id":"42"}`)
	r.Requirements[2].Findings[0].Reproducer = "curl -sS -i 'http://stored'"
	var md, page bytes.Buffer
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&page, r, nil); err != nil {
		t.Fatal(err)
	}
	if got := Reproduce(r.Requirements[0].Findings[0].Evidence, r.Targets); !strings.HasPrefix(got, "printf '%s' '{\"id\":\"42\"}' |\n  curl -sS -i http://127.0.0.1:8000/v2/models/add_sub/infer -H Content-Type: --data-binary @-") {
		t.Fatalf("built reproducer:\n%s", got)
	}
	for _, want := range []string{
		"Reproducer:\n\n```sh\nprintf '%s' '{\"id\":\"42\"}' |\n  curl -sS -i http://127.0.0.1:8000/v2/models/add_sub/infer -H Content-Type: --data-binary @-\n```\n",
		"Reproducer:\n\n```sh\ncurl -sS -i 'http://stored'\n```\n",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	for _, want := range []string{
		`<pre class="repro">printf &#39;%s&#39; &#39;{&#34;id&#34;:&#34;42&#34;}&#39; |`,
		`<pre class="repro">curl -sS -i &#39;http://stored&#39;</pre>`,
	} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if got := codeFence("a ```` b"); got != "`````" {
		t.Errorf("codeFence = %q, want five backticks", got)
	}
}
