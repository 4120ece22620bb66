package oiptarget

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"time"

	"github.com/oipkit/oipkit/loadgen"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

// A dateProbe asks the target for the time once. It returns the time the
// target dated its answer with, truncated to the whole second (an HTTP
// Date header), and the local times just before the request was sent and
// just after the answer arrived.
type dateProbe func(ctx context.Context) (date, sent, received time.Time, err error)

// Clock-estimate settings: each round spreads probesPerRound probes over
// the interval the offset is known to lie in, timed so that the target's
// clock turns a second between two of them; rounds stop once the interval
// is down to twice the round trip (or clockFloor), after maxClockRounds, or
// at the deadline.
const (
	probesPerRound = 25
	maxClockRounds = 4
	clockFloor     = 100 * time.Microsecond
)

// estimateOffset brackets the offset θ = target time − local time with the
// target's whole-second dates. An answer dated D, sent at local time a and
// received at b, was made when the target's clock read between D and
// D+1s, at a local time between a and b, so D − b ≤ θ < D + 1s − a. One
// probe brackets θ within a second; probes timed so that the target's
// clock is due to turn a second while they are answered split the bracket
// where its second turns, each round narrowing it about probesPerRound
// times, down to about the round-trip time. That is the precision: a
// loopback or in-cluster round trip of 0.1–1 ms gives ±0.1–1 ms. It
// assumes the target dates each answer when it makes it (Go's net/http
// does); a server or proxy that caches its Date header for a second biases
// the estimate by up to that second.
func estimateOffset(ctx context.Context, probe dateProbe, source string, deadline time.Time) loadgen.ClockOffset {
	out := loadgen.ClockOffset{Source: source}
	var lo, hi time.Duration // bracket of θ
	rtt := time.Duration(-1)
	answers, failures := 0, 0
	var lastErr error
	// ask probes once; it returns false when estimating must stop.
	ask := func() bool {
		d, a, b, err := probe(ctx)
		out.Probes++
		if err != nil {
			failures++
			lastErr = err
			return answers > 0 && failures <= 3 && !errors.Is(err, errNoDate)
		}
		a, b = a.Round(0), b.Round(0) // wall-clock readings
		l, h := d.Sub(b), d.Add(time.Second).Sub(a)
		if answers == 0 {
			lo, hi = l, h
		} else {
			lo, hi = max(lo, l), min(hi, h)
		}
		answers++
		if r := b.Sub(a); rtt < 0 || r < rtt {
			rtt = r
		}
		if lo > hi {
			lastErr = fmt.Errorf("the target's %s values contradict each other (its clock stepped, or it caches them)", source)
			answers = 0
			return false
		}
		return true
	}
	ok := ask()
	for round := 0; ok && round < maxClockRounds && hi-lo > max(2*rtt, clockFloor); round++ {
		// The target's clock turns to the whole second B at local time
		// B − θ: pick the first B that is still ahead for every θ in the
		// bracket, and place one probe's answer at B − θ_k for θ_k spread
		// over the bracket, largest θ (earliest local time) first.
		now := time.Now().Round(0)
		b := now.Add(hi + 5*time.Millisecond + rtt).Truncate(time.Second).Add(time.Second)
		if b.Add(-lo).After(deadline) {
			break
		}
		width := hi - lo
		for k := probesPerRound - 1; ok && k >= 0; k-- {
			theta := lo + width*time.Duration(2*k+1)/(2*probesPerRound)
			at := b.Add(-theta).Add(-rtt / 2) // sent half a round trip early
			ok = sleepUntil(ctx, at) && ask()
		}
	}
	if answers == 0 {
		out.Error = "no answer"
		if lastErr != nil {
			out.Error = lastErr.Error()
		} else if ctx.Err() != nil {
			out.Error = "no time left before the start"
		}
		return out
	}
	out.Offset = loadgen.Duration((lo + hi) / 2)
	out.Precision = loadgen.Duration((hi - lo + 1) / 2)
	return out
}

// sleepUntil waits until the wall-clock time t (or ctx ends): a timer for
// all but the last 2 ms, which it yields through, since a probe placed a
// millisecond late misses its place in a narrow bracket.
func sleepUntil(ctx context.Context, t time.Time) bool {
	if d := time.Until(t) - 2*time.Millisecond; d > 0 {
		tm := time.NewTimer(d)
		select {
		case <-ctx.Done():
			tm.Stop()
			return false
		case <-tm.C:
		}
	}
	for time.Until(t) > 0 {
		if ctx.Err() != nil {
			return false
		}
		runtime.Gosched()
	}
	return ctx.Err() == nil
}

// EstimateClockOffset estimates the offset of the target's clock from
// this process's until deadline (a few seconds suffice; see
// estimateOffset for the method and its precision). Over REST it reads the
// HTTP Date header of GET /v2/health/live; over gRPC the "date" header of
// ServerLive answers, which gRPC servers rarely send but proxies such as
// Envoy add. Without either, the result says why there is no estimate.
func (t *OIPTarget) EstimateClockOffset(ctx context.Context, deadline time.Time) loadgen.ClockOffset {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if t.conn != nil {
		return estimateOffset(ctx, t.grpcDateProbe(), "gRPC date header", deadline)
	}
	probe, closeIdle := t.httpDateProbe()
	defer closeIdle()
	return estimateOffset(ctx, probe, "HTTP Date header", deadline)
}

// httpDateProbe asks for the server's liveness over a keep-alive
// connection of its own and reads the Date header of the answer.
func (t *OIPTarget) httpDateProbe() (dateProbe, func()) {
	tr := &http.Transport{TLSClientConfig: t.tls, MaxIdleConnsPerHost: 1, DisableCompression: true, ForceAttemptHTTP2: false}
	hc := &http.Client{Transport: tr, Timeout: probeTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	url := strings.TrimSuffix(t.cfg.HTTP, "/") + "/v2/health/live"
	header, _ := client.ParseHeaders(t.cfg.Headers) // checked when the target was made
	probe := func(ctx context.Context) (time.Time, time.Time, time.Time, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return time.Time{}, time.Time{}, time.Time{}, err
		}
		for k, v := range header {
			req.Header[k] = v
		}
		if t.cfg.Host != "" {
			req.Host = t.cfg.Host
		}
		a := time.Now()
		resp, err := hc.Do(req)
		b := time.Now()
		if err != nil {
			return time.Time{}, a, b, err
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		d, err := parseDate(resp.Header.Get("Date"), "HTTP")
		return d, a, b, err
	}
	return probe, tr.CloseIdleConnections
}

// grpcDateProbe calls ServerLive and reads the "date" response header.
func (t *OIPTarget) grpcDateProbe() dateProbe {
	return func(ctx context.Context) (time.Time, time.Time, time.Time, error) {
		if t.md != nil {
			ctx = metadata.NewOutgoingContext(ctx, t.md)
		}
		var hdr metadata.MD
		a := time.Now()
		err := t.conn.Invoke(ctx, inferencepb.GRPCInferenceService_ServerLive_FullMethodName,
			&inferencepb.ServerLiveRequest{}, &inferencepb.ServerLiveResponse{}, grpc.Header(&hdr))
		b := time.Now()
		if err != nil {
			return time.Time{}, a, b, err
		}
		var v string
		if vs := hdr.Get("date"); len(vs) > 0 {
			v = vs[0]
		}
		d, err := parseDate(v, "gRPC")
		return d, a, b, err
	}
}

var errNoDate = errors.New("no date")

func parseDate(v, transport string) (time.Time, error) {
	if v == "" {
		return time.Time{}, fmt.Errorf("%w: the target's %s answers carry no Date header, so its clock cannot be read", errNoDate, transport)
	}
	d, err := http.ParseTime(v)
	if err != nil {
		return time.Time{}, fmt.Errorf("the target's Date header %q: %v", v, err)
	}
	return d, nil
}
