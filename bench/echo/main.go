package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/oipkit/oipkit/fixture"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference/model"
	"github.com/oipkit/oipkit/tensor"
)

func main() {
	listenTCP := flag.String("listen-tcp", "", "TCP echo on this address until killed")
	listenGRPC := flag.String("listen-grpc", "", "grpc-go pass-through echo on this address until killed")
	cannedHTTP := flag.String("canned-http", "", "REST server answering pre-built bytes on this address until killed")
	cannedGRPC := flag.String("canned-grpc", "", "gRPC server answering pre-built bytes on this address until killed")
	modelName := flag.String("model", "identity_fp32", "with -canned-*: the fixture model whose answer is pre-built")
	shape := flag.String("shape", "1,262144", "with -canned-*: the input shape, d1,d2,...")
	tcpAddr := flag.String("tcp", "", "measure round trips to a TCP echo at this address")
	grpcAddr := flag.String("grpc", "", "measure round trips to a gRPC echo at this address")
	size := flag.Int("size", 1<<20, "message bytes per request")
	workers := flag.Int("c", 4, "concurrent requests")
	duration := flag.Duration("d", 5*time.Second, "measurement length")
	flag.Parse()
	var err error
	switch {
	case *listenTCP != "" || *listenGRPC != "" || *cannedHTTP != "" || *cannedGRPC != "":
		err = serve(*listenTCP, *listenGRPC, *cannedHTTP, *cannedGRPC, *modelName, *shape)
	case (*tcpAddr != "") != (*grpcAddr != "") && *size > 0 && *workers > 0 && *duration > 0:
		var n int64
		if *tcpAddr != "" {
			n, err = measure(*workers, *duration, func() (roundTripper, error) { return dialTCP(*tcpAddr, *size) })
		} else {
			n, err = measureGRPC(*grpcAddr, *size, *workers, *duration)
		}
		if err == nil {
			fmt.Printf("{\"requests\":%d,\"rps\":%.1f,\"bytes\":%d,\"concurrency\":%d}\n", n, float64(n)/duration.Seconds(), *size, *workers)
		}
	default:
		err = errors.New("give servers (-listen-tcp, -listen-grpc, -canned-http, -canned-grpc) or one of -tcp and -grpc with -size, -c and -d > 0")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(1)
	}
}

func serve(tcpAddr, grpcAddr, cannedHTTP, cannedGRPC, modelName, shape string) error {
	errs := make(chan error, 4)
	listen := func(addr string, serve func(net.Listener) error) error {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return err
		}
		go func() { errs <- serve(ln) }()
		return nil
	}
	if tcpAddr != "" {
		if err := listen(tcpAddr, echoTCP); err != nil {
			return err
		}
	}
	if grpcAddr != "" {
		srv := grpc.NewServer(append(bigWindows(), grpc.ForceServerCodec(rawCodec{}),
			grpc.UnknownServiceHandler(func(_ any, s grpc.ServerStream) error {
				var in []byte
				if err := s.RecvMsg(&in); err != nil {
					return err
				}
				out := append([]byte(nil), in...)
				return s.SendMsg(&out)
			}))...)
		if err := listen(grpcAddr, srv.Serve); err != nil {
			return err
		}
	}
	if cannedHTTP != "" || cannedGRPC != "" {
		c, err := newCanned(modelName, shape)
		if err != nil {
			return err
		}
		if cannedHTTP != "" {
			if err := listen(cannedHTTP, (&http.Server{Handler: c}).Serve); err != nil {
				return err
			}
		}
		if cannedGRPC != "" {
			a := newH2CAnswers(c.grpcAnswer)
			if err := listen(cannedGRPC, func(ln net.Listener) error { return serveH2C(ln, a) }); err != nil {
				return err
			}
		}
	}
	return <-errs
}

// bigWindows: flow-control windows and buffers large enough that a 16 MiB
// message is not throttled by them (measured: windows are not grpc-go's limit).
func bigWindows() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.InitialWindowSize(16 << 20), grpc.InitialConnWindowSize(64 << 20),
		grpc.ReadBufferSize(1 << 20), grpc.WriteBufferSize(1 << 20),
		grpc.MaxRecvMsgSize(64 << 20), grpc.MaxSendMsgSize(64 << 20),
	}
}

// echoTCP answers each length-prefixed message with one copy of it.
func echoTCP(ln net.Listener) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			var hdr [4]byte
			var in []byte
			for {
				if _, err := io.ReadFull(c, hdr[:]); err != nil {
					return
				}
				n := int(binary.BigEndian.Uint32(hdr[:]))
				if cap(in) < n {
					in = make([]byte, n)
				}
				in = in[:n]
				if _, err := io.ReadFull(c, in); err != nil {
					return
				}
				out := make([]byte, 4+n) // the one copy: a new answer each time
				copy(out, hdr[:])
				copy(out[4:], in)
				if _, err := c.Write(out); err != nil {
					return
				}
			}
		}()
	}
}

// rawCodec passes message bytes through unchanged.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) ([]byte, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("raw codec: cannot marshal %T", v)
	}
	return *b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("raw codec: cannot unmarshal into %T", v)
	}
	*b = append((*b)[:0], data...)
	return nil
}

type roundTripper interface {
	roundTrip() error
	Close() error
}

// measure runs workers closed loops of round trips for d and counts the
// completed ones.
func measure(workers int, d time.Duration, dial func() (roundTripper, error)) (int64, error) {
	rts := make([]roundTripper, workers)
	for i := range rts {
		rt, err := dial()
		if err != nil {
			return 0, err
		}
		defer rt.Close()
		rts[i] = rt
	}
	var n atomic.Int64
	var stop atomic.Bool
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for i, rt := range rts {
		wg.Go(func() {
			for !stop.Load() {
				if err := rt.roundTrip(); err != nil {
					errs[i] = err
					return
				}
				n.Add(1)
			}
		})
	}
	time.Sleep(d)
	stop.Store(true)
	done := n.Load() // the ones completed inside d
	wg.Wait()
	return done, errors.Join(errs...)
}

type tcpClient struct {
	c       net.Conn
	out, in []byte
}

func dialTCP(addr string, size int) (roundTripper, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 4+size)
	binary.BigEndian.PutUint32(out, uint32(size))
	return &tcpClient{c: c, out: out, in: make([]byte, 4+size)}, nil
}

func (t *tcpClient) roundTrip() error {
	if _, err := t.c.Write(t.out); err != nil {
		return fmt.Errorf("tcp echo: write: %w", err)
	}
	if _, err := io.ReadFull(t.c, t.in); err != nil {
		return fmt.Errorf("tcp echo: read: %w", err)
	}
	return nil
}

func (t *tcpClient) Close() error { return t.c.Close() }

type grpcClient struct {
	cc  *grpc.ClientConn
	req []byte
}

func measureGRPC(addr string, size, workers int, d time.Duration) (int64, error) {
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(16<<20), grpc.WithInitialConnWindowSize(64<<20),
		grpc.WithReadBufferSize(1<<20), grpc.WithWriteBufferSize(1<<20),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{}), grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		return 0, err
	}
	defer cc.Close()
	// Opaque bytes: the pass-through echo never decodes them.
	msg := make([]byte, size)
	return measure(workers, d, func() (roundTripper, error) { return &grpcClient{cc: cc, req: msg}, nil })
}

func (g *grpcClient) roundTrip() error {
	var resp []byte
	if err := g.cc.Invoke(context.Background(), "/inference.GRPCInferenceService/ModelInfer", &g.req, &resp); err != nil {
		return fmt.Errorf("grpc echo: %w", err)
	}
	if len(resp) != len(g.req) {
		return fmt.Errorf("grpc echo: %d bytes answered to %d", len(resp), len(g.req))
	}
	return nil
}

func (g *grpcClient) Close() error { return nil }

// canned holds a model's answers, built once.
type canned struct {
	binary, headerLen, length []string
	body                      []byte
	metadataJSON              []byte
	grpcInfer, grpcMetadata   []byte
}

var ready = []byte{0x08, 0x01} // {ready: true} of ServerReady, ModelReady and ServerLive

func newCanned(modelName, shape string) (*canned, error) {
	m, version, err := model.Fixtures(fixture.Config{}).Lookup(modelName, "")
	if err != nil {
		return nil, err
	}
	md := m.Metadata()
	var dims []int64
	for _, s := range strings.Split(shape, ",") {
		d, err := strconv.ParseInt(s, 10, 64)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("shape %q: %q is not a dimension", shape, s)
		}
		dims = append(dims, d)
	}
	inputs := make(map[string]tensor.Tensor)
	for _, in := range md.Inputs {
		t, err := tensor.Zero(in.Name, tensor.Datatype(in.Datatype), dims)
		if err != nil {
			return nil, fmt.Errorf("input %s: %w", in.Name, err)
		}
		inputs[in.Name] = t
	}
	outs, err := m.Infer(context.Background(), inputs, nil)
	if err != nil {
		return nil, fmt.Errorf("%s on zeros of shape %s: %w", modelName, shape, err)
	}
	resp := &oip.InferResponse{Model: md.Name, Version: version}
	for _, t := range outs {
		resp.Outputs = append(resp.Outputs, oip.InferOutput{Tensor: t})
	}
	c := &canned{}
	body, hl, err := oip.EncodeRESTResponse(resp, func(string) bool { return true })
	if err != nil {
		return nil, err
	}
	c.body, c.headerLen, c.length = body, []string{strconv.Itoa(hl)}, []string{strconv.Itoa(len(body))}
	if c.metadataJSON, err = json.Marshal(md); err != nil {
		return nil, err
	}
	pr, err := oip.ToProtoResponse(resp, true)
	if err != nil {
		return nil, err
	}
	if c.grpcInfer, err = proto.Marshal(pr); err != nil {
		return nil, err
	}
	if c.grpcMetadata, err = proto.Marshal(oip.ModelMetadataToProto(&md)); err != nil {
		return nil, err
	}
	return c, nil
}

var contentTypeBinary = []string{"application/octet-stream"}

func (c *canned) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch p := r.URL.Path; {
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/infer"):
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		h := w.Header()
		h["Content-Type"] = contentTypeBinary
		h[oip.HeaderInferenceHeaderContentLength] = c.headerLen
		h["Content-Length"] = c.length
		w.Write(c.body)
	case strings.HasSuffix(p, "/ready"):
		w.Write([]byte(`{"ready":true}`))
	case p == "/v2":
		w.Write([]byte(`{"name":"canned","version":"0","extensions":["binary_tensor_data"]}`))
	case strings.HasPrefix(p, "/v2/models/"):
		w.Write(c.metadataJSON)
	default:
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"error":"not found"}`))
	}
}

// grpcAnswer is the answer message to a method of the inference service
// (its name without the service).
func (c *canned) grpcAnswer(method string) []byte {
	switch method {
	case "ModelInfer":
		return c.grpcInfer
	case "ModelMetadata":
		return c.grpcMetadata
	case "ServerMetadata":
		return []byte{0x0a, 0x06, 'c', 'a', 'n', 'n', 'e', 'd'}
	}
	return ready
}
