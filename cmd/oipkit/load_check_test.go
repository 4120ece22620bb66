package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/oipkit/oipkit/fixture"
	"github.com/oipkit/oipkit/oip"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/verdict"
)

// TestLoadChecksAnswers: against servers that serve add_sub's metadata and
// answer every inference with a well-framed success that is not an
// inference response, oipkit load exits 3 and its result names the reason;
// with --check-every 0 (framing and status only) the same run passes.
func TestLoadChecksAnswers(t *testing.T) {
	md := fixture.NewAddSub().Metadata()
	mdJSON, err := json.Marshal(md)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v2", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"name":"garbage","version":"1","extensions":[]}`))
	})
	for _, path := range []string{"/v2/health/ready", "/v2/health/live", "/v2/models/add_sub/ready"} {
		mux.HandleFunc("GET "+path, func(w http.ResponseWriter, r *http.Request) {})
	}
	mux.HandleFunc("GET /v2/models/add_sub", func(w http.ResponseWriter, r *http.Request) { w.Write(mdJSON) })
	mux.HandleFunc("POST /v2/models/add_sub/infer", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("<html><body>OK</body></html>"))
	})
	rest := httptest.NewServer(mux)
	defer rest.Close()

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(grpc.ForceServerCodecV2(notProtobufCodec{}))
	pb.RegisterGRPCInferenceServiceServer(g, garbageInference{md: oip.ModelMetadataToProto(&md)})
	go g.Serve(lis)
	defer g.Stop()

	dir := t.TempDir()
	for _, c := range []struct {
		name   string
		target []string
		more   []string
		code   int
		reason string // in the result's validation samples
	}{
		{"REST", []string{"--http", rest.URL}, nil, verdict.ExitFailed, "not an inference response: invalid message: malformed JSON"},
		{"REST, binary", []string{"--http", rest.URL, "--protocol", "http-binary"}, nil, verdict.ExitFailed, "not an inference response: "},
		{"REST, framing only", []string{"--http", rest.URL}, []string{"--check-every", "0"}, verdict.ExitPass, ""},
		{"gRPC raw", []string{"--grpc", lis.Addr().String()}, nil, verdict.ExitFailed, "not an inference response: decode ModelInferResponse"},
		{"gRPC typed", []string{"--grpc", lis.Addr().String(), "--protocol", "grpc"}, nil, verdict.ExitFailed, "not an inference response: decode ModelInferResponse"},
		{"gRPC, framing only", []string{"--grpc", lis.Addr().String()}, []string{"--check-every", "0"}, verdict.ExitPass, ""},
		{"negative", []string{"--grpc", lis.Addr().String()}, []string{"--check-every", "-1"}, verdict.ExitUsage, ""},
	} {
		out := filepath.Join(dir, strings.NewReplacer(" ", "", ",", "").Replace(c.name)+".json")
		args := append(append([]string{"load", "--model", "add_sub", "--concurrency", "2", "--duration", "500ms",
			"--progress", "never", "--output", out}, c.target...), c.more...)
		var stdout, stderr bytes.Buffer
		if got := run(context.Background(), args, &stdout, &stderr); got != c.code {
			t.Errorf("%s: exit %d, want %d; stderr %s", c.name, got, c.code, stderr.String())
			continue
		}
		if c.code == verdict.ExitUsage {
			continue
		}
		r := readResult(t, out)
		samples := r.ErrorSamples["validation"]
		switch {
		case c.reason == "" && (r.Counts.Errors != 0 || r.Counts.OK == 0):
			t.Errorf("%s: %d ok, errors %v: want every request ok", c.name, r.Counts.OK, r.Errors)
		case c.reason != "" && (len(samples) == 0 || !strings.Contains(samples[0], c.reason)):
			t.Errorf("%s: validation samples %q, want one containing %q (errors %v)", c.name, samples, c.reason, r.Errors)
		}
	}
}

// garbageInference serves add_sub's readiness and metadata; notProtobufCodec
// replaces its ModelInfer answers.
type garbageInference struct {
	pb.UnimplementedGRPCInferenceServiceServer
	md *pb.ModelMetadataResponse
}

func (garbageInference) ServerLive(context.Context, *pb.ServerLiveRequest) (*pb.ServerLiveResponse, error) {
	return &pb.ServerLiveResponse{Live: true}, nil
}

func (garbageInference) ServerReady(context.Context, *pb.ServerReadyRequest) (*pb.ServerReadyResponse, error) {
	return &pb.ServerReadyResponse{Ready: true}, nil
}

func (garbageInference) ServerMetadata(context.Context, *pb.ServerMetadataRequest) (*pb.ServerMetadataResponse, error) {
	return &pb.ServerMetadataResponse{Name: "garbage", Version: "1"}, nil
}

func (garbageInference) ModelReady(context.Context, *pb.ModelReadyRequest) (*pb.ModelReadyResponse, error) {
	return &pb.ModelReadyResponse{Ready: true}, nil
}

func (s garbageInference) ModelMetadata(context.Context, *pb.ModelMetadataRequest) (*pb.ModelMetadataResponse, error) {
	return s.md, nil
}

func (garbageInference) ModelInfer(context.Context, *pb.ModelInferRequest) (*pb.ModelInferResponse, error) {
	return &pb.ModelInferResponse{}, nil
}

// notProtobufCodec writes bytes that are not a protobuf message in place of
// every ModelInferResponse (a length beyond the message), protobuf for
// everything else.
type notProtobufCodec struct{}

func (notProtobufCodec) Marshal(v any) (mem.BufferSlice, error) {
	if _, ok := v.(*pb.ModelInferResponse); ok {
		return mem.BufferSlice{mem.SliceBuffer([]byte("\x0a\x64add_sub"))}, nil
	}
	b, err := proto.Marshal(v.(proto.Message))
	return mem.BufferSlice{mem.SliceBuffer(b)}, err
}

func (notProtobufCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return proto.Unmarshal(data.Materialize(), v.(proto.Message))
}

func (notProtobufCodec) Name() string { return "proto" }
