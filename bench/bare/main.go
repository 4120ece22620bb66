package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"

	"google.golang.org/grpc"

	"github.com/oipkit/oipkit/fixture"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference/model"
	"github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

func main() {
	httpAddr := flag.String("http", "127.0.0.1:18710", "REST listen address (\"\" disables)")
	grpcAddr := flag.String("grpc", "127.0.0.1:18711", "gRPC listen address (\"\" disables)")
	request := flag.String("request", "", "REST JSON body of the add_sub request the clients send (required)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file (for comparing with the reference server's)")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bare:", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "bare:", err)
			os.Exit(1)
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	if err := run(*request, *httpAddr, *grpcAddr); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "bare:", err)
		os.Exit(1)
	}
}

func run(request, httpAddr, grpcAddr string) error {
	body, err := os.ReadFile(request)
	if err != nil {
		return err
	}
	a, err := newAnswers(body)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errs := make(chan error, 2)
	if httpAddr != "" {
		ln, err := net.Listen("tcp", httpAddr)
		if err != nil {
			return err
		}
		srv := &http.Server{Handler: a}
		go func() { errs <- srv.Serve(ln) }()
		defer srv.Close()
	}
	if grpcAddr != "" {
		ln, err := net.Listen("tcp", grpcAddr)
		if err != nil {
			return err
		}
		// The reference server's call-worker pool, so that the ratio
		// measures what the reference does per call, not a server option.
		srv := grpc.NewServer(grpc.NumStreamWorkers(64))
		inferencepb.RegisterGRPCInferenceServiceServer(srv, &bareGRPC{a: a})
		go func() { errs <- srv.Serve(ln) }()
		defer srv.Stop()
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-errs:
		return err
	}
}

// answers holds every response, built once.
type answers struct {
	json, binary   []byte
	binaryHeader   []string // Inference-Header-Content-Length of binary
	jsonLength     []string
	binaryLength   []string
	grpcRaw, typed *inferencepb.ModelInferResponse
	metadata       *inferencepb.ModelMetadataResponse
	metadataJSON   []byte // REST model metadata
}

var (
	contentTypeJSON   = []string{"application/json"}
	contentTypeBinary = []string{"application/octet-stream"}
)

// newAnswers runs the add_sub fixture on the request in body and encodes
// its response the ways the reference server does.
func newAnswers(body []byte) (*answers, error) {
	req, err := oip.DecodeRESTRequest(body, -1, oip.Limits{})
	if err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	m, version, err := model.Fixtures(fixture.Config{}).Lookup("add_sub", "")
	if err != nil {
		return nil, err
	}
	inputs := make(map[string]tensor.Tensor, len(req.Inputs))
	for _, in := range req.Inputs {
		inputs[in.Name] = in.Tensor
	}
	outs, err := m.Infer(context.Background(), inputs, nil)
	if err != nil {
		return nil, err
	}
	md := m.Metadata()
	resp := &oip.InferResponse{Model: md.Name, Version: version, ID: req.ID}
	for _, t := range outs {
		resp.Outputs = append(resp.Outputs, oip.InferOutput{Tensor: t})
	}
	a := &answers{metadata: oip.ModelMetadataToProto(&md)}
	if a.metadataJSON, err = json.Marshal(md); err != nil {
		return nil, err
	}
	if a.json, _, err = oip.EncodeRESTResponse(resp, nil); err != nil {
		return nil, err
	}
	var hl int
	if a.binary, hl, err = oip.EncodeRESTResponse(resp, func(string) bool { return true }); err != nil {
		return nil, err
	}
	a.binaryHeader = []string{strconv.Itoa(hl)}
	a.jsonLength = []string{strconv.Itoa(len(a.json))}
	a.binaryLength = []string{strconv.Itoa(len(a.binary))}
	if a.grpcRaw, err = oip.ToProtoResponse(resp, true); err != nil {
		return nil, err
	}
	if a.typed, err = oip.ToProtoResponse(resp, false); err != nil {
		return nil, err
	}
	return a, nil
}

// ServeHTTP is the bare REST handler: read the body, write the answer. GETs
// answer what oipkit load asks before a run (readiness, metadata).
func (a *answers) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		a.serveGet(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	if _, err := io.Copy(io.Discard, r.Body); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	h := w.Header()
	body := a.json
	if r.Header[oip.HeaderInferenceHeaderContentLength] != nil {
		body = a.binary
		h["Content-Type"] = contentTypeBinary
		h[oip.HeaderInferenceHeaderContentLength] = a.binaryHeader
		h["Content-Length"] = a.binaryLength
	} else {
		h["Content-Type"] = contentTypeJSON
		h["Content-Length"] = a.jsonLength
	}
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

func (a *answers) serveGet(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch p := r.URL.Path; {
	case strings.HasSuffix(p, "/ready"):
		w.Write([]byte(`{"ready":true}`))
	case p == "/v2":
		w.Write([]byte(`{"name":"bare","version":"0","extensions":["binary_tensor_data"]}`))
	case strings.HasPrefix(p, "/v2/models/"):
		w.Write(a.metadataJSON)
	default:
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"error":"not found"}`))
	}
}

// bareGRPC is the bare gRPC service: ModelInfer returns a pre-built message.
// The health and metadata calls answer what oipkit load asks before a run.
type bareGRPC struct {
	inferencepb.UnimplementedGRPCInferenceServiceServer
	a *answers
}

func (g *bareGRPC) ModelInfer(_ context.Context, req *inferencepb.ModelInferRequest) (*inferencepb.ModelInferResponse, error) {
	if len(req.RawInputContents) > 0 {
		return g.a.grpcRaw, nil
	}
	return g.a.typed, nil
}

func (g *bareGRPC) ServerReady(context.Context, *inferencepb.ServerReadyRequest) (*inferencepb.ServerReadyResponse, error) {
	return &inferencepb.ServerReadyResponse{Ready: true}, nil
}

func (g *bareGRPC) ModelReady(context.Context, *inferencepb.ModelReadyRequest) (*inferencepb.ModelReadyResponse, error) {
	return &inferencepb.ModelReadyResponse{Ready: true}, nil
}

func (g *bareGRPC) ServerMetadata(context.Context, *inferencepb.ServerMetadataRequest) (*inferencepb.ServerMetadataResponse, error) {
	return &inferencepb.ServerMetadataResponse{Name: "bare", Version: "0"}, nil
}

func (g *bareGRPC) ModelMetadata(context.Context, *inferencepb.ModelMetadataRequest) (*inferencepb.ModelMetadataResponse, error) {
	return g.a.metadata, nil
}
