package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/oipkit/oipkit/specs/inferencepb"
)

func main() {
	listenTCP := flag.String("listen-tcp", "", "echo TCP messages on this address until killed")
	listenGRPC := flag.String("listen-grpc", "", "answer ModelStreamInfer on this address until killed")
	tcpAddr := flag.String("tcp", "", "measure TCP round trips to an echoing rtt at this address")
	grpcAddr := flag.String("grpc", "", "measure ModelStreamInfer round trips to an rtt at this address")
	gap := flag.Duration("gap", 5*time.Millisecond, "idle time before each send")
	n := flag.Int("n", 1000, "round trips to measure")
	flag.Parse()
	var err error
	switch {
	case *listenTCP != "" || *listenGRPC != "":
		err = serve(*listenTCP, *listenGRPC)
	case (*tcpAddr != "") != (*grpcAddr != "") && *n > 0 && *gap >= 0:
		if *tcpAddr != "" {
			err = measureTCP(*tcpAddr, *gap, *n)
		} else {
			err = measureGRPC(*grpcAddr, *gap, *n)
		}
	default:
		err = errors.New("give -listen-tcp and/or -listen-grpc, or one of -tcp and -grpc with -n > 0 and -gap >= 0")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "rtt:", err)
		os.Exit(1)
	}
}

// size is the TCP message: about a small gRPC request's frame.
const size = 64

func serve(tcpAddr, grpcAddr string) error {
	errs := make(chan error, 2)
	if tcpAddr != "" {
		ln, err := net.Listen("tcp", tcpAddr)
		if err != nil {
			return err
		}
		go func() { errs <- echo(ln) }()
	}
	if grpcAddr != "" {
		ln, err := net.Listen("tcp", grpcAddr)
		if err != nil {
			return err
		}
		srv := grpc.NewServer()
		inferencepb.RegisterGRPCInferenceServiceServer(srv, &streamEcho{})
		go func() { errs <- srv.Serve(ln) }()
	}
	return <-errs
}

func echo(ln net.Listener) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			b := make([]byte, size)
			for {
				if _, err := io.ReadFull(c, b); err != nil {
					return
				}
				if _, err := c.Write(b); err != nil {
					return
				}
			}
		}()
	}
}

// streamEcho answers every request of a ModelStreamInfer stream at once,
// on the stream's own goroutine, with one response built at start.
type streamEcho struct {
	inferencepb.UnimplementedGRPCInferenceServiceServer
}

func (streamEcho) ModelStreamInfer(stream inferencepb.GRPCInferenceService_ModelStreamInferServer) error {
	resp := &inferencepb.ModelStreamInferResponse{InferResponse: &inferencepb.ModelInferResponse{ModelName: "echo"}}
	for {
		req, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		resp.InferResponse.Id = req.GetId()
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
}

func measureTCP(addr string, gap time.Duration, n int) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	b := make([]byte, size)
	rtts, err := trips(gap, n, func() error {
		if _, err := c.Write(b); err != nil {
			return err
		}
		_, err := io.ReadFull(c, b)
		return err
	})
	if err != nil {
		return err
	}
	report(fmt.Sprintf("tcp round trip, %d-byte message", size), gap, rtts)
	return nil
}

func measureGRPC(addr string, gap time.Duration, n int) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := inferencepb.NewGRPCInferenceServiceClient(conn).ModelStreamInfer(ctx)
	if err != nil {
		return err
	}
	req := &inferencepb.ModelInferRequest{ModelName: "echo", Id: "1"}
	rtts, err := trips(gap, n, func() error {
		if err := stream.Send(req); err != nil {
			return err
		}
		_, err := stream.Recv()
		return err
	})
	if err != nil {
		return err
	}
	report("grpc ModelStreamInfer round trip (grpc-go both ends, no model)", gap, rtts)
	return nil
}

// trips times n calls of trip, each after gap of idleness. The first call
// (connection set-up, stream open) is not counted.
func trips(gap time.Duration, n int, trip func() error) ([]time.Duration, error) {
	if err := trip(); err != nil {
		return nil, err
	}
	rtts := make([]time.Duration, 0, n)
	for range n {
		time.Sleep(gap)
		start := time.Now()
		if err := trip(); err != nil {
			return nil, err
		}
		rtts = append(rtts, time.Since(start))
	}
	return rtts, nil
}

func report(what string, gap time.Duration, rtts []time.Duration) {
	var sum time.Duration
	for _, d := range rtts {
		sum += d
	}
	slices.Sort(rtts)
	q := func(p float64) time.Duration { return rtts[int(p*float64(len(rtts)-1))] }
	ms := func(d time.Duration) string { return fmt.Sprintf("%.3f", float64(d)/1e6) }
	fmt.Printf("%s after %v idle, %d trips: mean %s ms, p50 %s ms, p90 %s ms, p99 %s ms\n",
		what, gap, len(rtts), ms(sum/time.Duration(len(rtts))), ms(q(.5)), ms(q(.9)), ms(q(.99)))
}
