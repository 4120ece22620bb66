package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

const method = "/inference.GRPCInferenceService/ModelStreamInfer"

func main() {
	record := flag.String("record", "", "server: the reference server's gRPC address to record the tokens responses from")
	listen := flag.String("listen", "", "server: listen address")
	grpcAddr := flag.String("grpc", "", "client: a stream server's address")
	n := flag.Int("n", 100, "tokens requested per request (INPUT0)")
	responses := flag.Int("responses", 0, "client: messages per request (what the server printed)")
	workers := flag.Int("c", 4, "client: concurrent streams")
	d := flag.Duration("d", 5*time.Second, "client: how long to run")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch {
	case *record != "" && *listen != "" && *n > 0:
		err = serve(ctx, *record, *listen, *n)
	case *grpcAddr != "" && *responses > 0 && *workers > 0 && *d > 0:
		var requests, got int64
		start := time.Now()
		requests, got, err = client(ctx, *grpcAddr, *n, *responses, *workers, *d)
		if err == nil {
			s := time.Since(start).Seconds()
			fmt.Printf("{\"requests\":%d,\"responses\":%d,\"rps\":%.1f,\"responses_per_s\":%.1f}\n",
				requests, got, float64(requests)/s, float64(got)/s)
		}
	default:
		err = errors.New("give -record and -listen (server) or -grpc with -responses, -c and -d (client)")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "stream:", err)
		os.Exit(1)
	}
}

// request is the tokens request oipkit load --streaming sends for
// --input-data INPUT0=n --param interval_ms=0, encoded once.
func request(n int) ([]byte, error) {
	raw := []byte{byte(n), byte(n >> 8), byte(n >> 16), byte(n >> 24)}
	return proto.Marshal(&inferencepb.ModelInferRequest{
		ModelName: "tokens",
		Inputs:    []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "INPUT0", Datatype: "INT32", Shape: []int64{1}}},
		Parameters: map[string]*inferencepb.InferParameter{
			"interval_ms":                           {ParameterChoice: &inferencepb.InferParameter_Int64Param{Int64Param: 0}},
			oip.ParamTritonEnableEmptyFinalResponse: {ParameterChoice: &inferencepb.InferParameter_BoolParam{BoolParam: true}},
		},
		RawInputContents: [][]byte{raw},
	})
}

// rawCodec passes message bytes through untouched.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("rawCodec: marshal %T", v)
	}
	return mem.BufferSlice{mem.SliceBuffer(*b)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("rawCodec: unmarshal into %T", v)
	}
	*b = data.Materialize()
	return nil
}

var streamDesc = grpc.StreamDesc{StreamName: "ModelStreamInfer", ServerStreams: true, ClientStreams: true}

// recordTokens asks the reference for one request's responses and keeps
// their bytes, up to the one flagged triton_final_response.
func recordTokens(ctx context.Context, cc *grpc.ClientConn, addr string, n int) ([][]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s, err := cc.NewStream(ctx, &streamDesc, method, grpc.ForceCodecV2(rawCodec{}))
	if err != nil {
		return nil, fmt.Errorf("record from %s: %w", addr, err)
	}
	req, err := request(n)
	if err != nil {
		return nil, err
	}
	if err := s.SendMsg(&req); err != nil {
		return nil, fmt.Errorf("record from %s: send: %w", addr, err)
	}
	var msgs [][]byte
	for {
		var b []byte
		if err := s.RecvMsg(&b); err != nil {
			return nil, fmt.Errorf("record from %s: after %d responses: %w", addr, len(msgs), err)
		}
		msgs = append(msgs, b)
		var m inferencepb.ModelStreamInferResponse
		if err := proto.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("record from %s: response %d: %w", addr, len(msgs), err)
		}
		if m.ErrorMessage != "" {
			return nil, fmt.Errorf("record from %s: %s", addr, m.ErrorMessage)
		}
		if p := m.GetInferResponse().GetParameters()[oip.ParamTritonFinalResponse]; p.GetBoolParam() {
			return msgs, nil
		}
		if len(msgs) > n+1 {
			return nil, fmt.Errorf("record from %s: %d responses and no final one", addr, len(msgs))
		}
	}
}

func serve(ctx context.Context, from, listen string, n int) error {
	cc, err := grpc.NewClient(from, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer cc.Close()
	msgs, err := recordTokens(ctx, cc, from, n)
	if err != nil {
		return err
	}
	size := 0
	for _, m := range msgs {
		size += len(m)
	}
	fmt.Printf("{\"responses\":%d,\"bytes\":%d}\n", len(msgs), size)
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	srv := grpc.NewServer(grpc.ForceServerCodecV2(rawCodec{}), grpc.UnknownServiceHandler(func(_ any, s grpc.ServerStream) error {
		var in []byte
		if m, _ := grpc.MethodFromServerStream(s); m != method {
			// What a client asks before a run (readiness, metadata) is
			// the reference's own answer, passed through.
			if err := s.RecvMsg(&in); err != nil {
				return err
			}
			var out []byte
			if err := cc.Invoke(s.Context(), m, &in, &out, grpc.ForceCodecV2(rawCodec{})); err != nil {
				return err
			}
			return s.SendMsg(&out)
		}
		for {
			if err := s.RecvMsg(&in); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
			for i := range msgs {
				if err := s.SendMsg(&msgs[i]); err != nil {
					return err
				}
			}
		}
	}))
	go func() {
		<-ctx.Done()
		srv.Stop()
	}()
	return srv.Serve(ln)
}

// client runs workers streams for d and counts the requests completed and
// the responses read.
func client(ctx context.Context, addr string, n, responses, workers int, d time.Duration) (requests, got int64, err error) {
	req, err := request(n)
	if err != nil {
		return 0, 0, err
	}
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{})))
	if err != nil {
		return 0, 0, err
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var nreq, nresp atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := cc.NewStream(ctx, &streamDesc, method)
			if err != nil {
				errs <- err
				return
			}
			var b []byte
			for ctx.Err() == nil {
				if err := s.SendMsg(&req); err != nil {
					break
				}
				for range responses {
					if err := s.RecvMsg(&b); err != nil {
						if ctx.Err() == nil {
							errs <- err
						}
						return
					}
					nresp.Add(1)
				}
				nreq.Add(1)
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return nreq.Load(), nresp.Load(), err
	default:
	}
	return nreq.Load(), nresp.Load(), nil
}
