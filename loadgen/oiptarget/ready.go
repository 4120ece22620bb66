package oiptarget

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/oip"
)

// Bounds on what the target tells the generator before the run. A server
// is free to describe a model with a million inputs; the generator is free
// not to believe it: these caps keep the control calls to a few MB whatever
// comes back, and each exceeded cap is a one-line error.
const (
	// maxControlBytes caps a readiness or metadata answer.
	maxControlBytes = 1 << 20
	// maxModelTensors caps a model's inputs and outputs, and
	// maxTensorDims a tensor's dimensions.
	maxModelTensors = 1024
	maxTensorDims   = 64
	// probeTimeout bounds one readiness probe, so that a server that
	// holds a probe open does not hide the wait from the progress line.
	probeTimeout = 5 * time.Second
	// readyProgressEvery is how often ReadyProgress hears of the wait
	// (first after half of it).
	readyProgressEvery = 2 * time.Second
)

// controlClient is the client of the calls around the run — identify,
// readiness, metadata — with the response cap above and one connection.
func controlClient(addr string, p client.Protocol, opts client.Options) (client.Client, error) {
	opts.MaxResponseBytes = maxControlBytes
	opts.Connections = 1
	// Control calls get their own budget: a request timeout set for the
	// model's answers (Target.Timeout 2ms to count timeouts) must not make a
	// loaded machine's readiness probe fail.
	opts.Timeout = probeTimeout
	return client.New(addr, p, opts)
}

// identify checks, within client.DefaultIdentifyTimeout, that something
// listens at the address and speaks OIP over the configured transport, so
// that a wrong port fails at once with the likely mistake rather than after
// the readiness timeout.
func (t *OIPTarget) identify(ctx context.Context) error {
	var err error
	switch c := t.ctl.(type) {
	case *client.REST:
		_, err = c.Identify(ctx)
	case *client.GRPC:
		_, err = c.Identify(ctx)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	return nil
}

// Answering checks, as identify does, that the target still answers; the
// run uses it to tell a server that went away from one that answers badly.
func (t *OIPTarget) Answering(ctx context.Context) error { return t.identify(ctx) }

// waitReady identifies the target, then polls server and model readiness
// until both hold or timeout passes, telling progress about the wait.
//
// With TargetConfig.WaitForListener, a target where nothing listens yet is
// waited for too (identification is retried) rather than refused at once.
func (t *OIPTarget) waitReady(ctx context.Context, timeout time.Duration, progress func(time.Duration, string)) error {
	identified := false
	if !t.cfg.WaitForListener {
		if err := t.identify(ctx); err != nil {
			return err
		}
		identified = true
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	wait := 50 * time.Millisecond
	lastTold := start.Add(-readyProgressEvery / 2) // the first word after a second
	var last error
	// retryAfter records why the target is not ready yet, tells progress
	// now and then, and waits (backing off) before the next attempt; it
	// returns the error to end with when the wait is over.
	retryAfter := func(why error) error {
		last = why
		if progress != nil && time.Since(lastTold) >= readyProgressEvery {
			progress(time.Since(start), last.Error())
			lastTold = time.Now()
		}
		select {
		case <-ctx.Done():
			if ctx.Err() == context.Canceled {
				return ctx.Err()
			}
			return fmt.Errorf("%w after %v: %v", ErrNotReady, timeout, last)
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
		return nil
	}
	for {
		if !identified {
			err := t.identify(ctx)
			switch {
			case err == nil:
				identified = true
			case errors.Is(err, client.ErrUnreachable) && ctx.Err() == nil:
			default:
				if ctx.Err() == context.DeadlineExceeded && last != nil {
					return fmt.Errorf("%w after %v: %v", ErrNotReady, timeout, last)
				}
				return err
			}
			if !identified {
				if err := retryAfter(err); err != nil {
					return err
				}
				continue
			}
		}
		pctx, pcancel := context.WithTimeout(ctx, probeTimeout)
		ok, err := t.ctl.ServerReady(pctx)
		if err == nil && !ok {
			err = errors.New("the server is not ready")
		}
		if err == nil {
			ok, err = t.ctl.ModelReady(pctx, t.cfg.Model, t.cfg.ModelVersion)
			if err == nil && !ok {
				err = fmt.Errorf("model %q is not ready", t.cfg.Model)
			}
			// A ready server that does not know the model will not learn
			// it by waiting: say so now rather than after the timeout.
			if notFound(err) {
				pcancel()
				return fmt.Errorf("%w: model %q (version %q) not found: %v", ErrNotReady, t.cfg.Model, t.cfg.ModelVersion, err)
			}
		}
		pcancel()
		if err == nil {
			return nil
		}
		// A certificate that is refused now will be refused after waiting.
		if terr := client.TLSError(err, t.tls); terr != nil {
			return fmt.Errorf("%w: %w", ErrNotReady, terr)
		}
		if err := retryAfter(err); err != nil {
			return err
		}
	}
}

// notFound reports an answer that says the model does not exist (HTTP 404 or
// gRPC NOT_FOUND), as opposed to a model that is still loading.
func notFound(err error) bool {
	var ce *client.Error
	return errors.As(err, &ce) && (ce.HTTPStatus == http.StatusNotFound || ce.GRPCCode == codes.NotFound)
}

// describe reads the server and model metadata through the bounded
// control client and refuses metadata beyond the generator's caps.
func (t *OIPTarget) describe(ctx context.Context) (*oip.ServerMetadata, *oip.ModelMetadata, error) {
	mctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	sm, err := t.ctl.ServerMetadata(mctx)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: server metadata: %v", ErrNotReady, err)
	}
	meta, err := t.ctl.ModelMetadata(mctx, t.cfg.Model, t.cfg.ModelVersion)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: model metadata: %v", ErrNotReady, err)
	}
	if err := checkMetadata(meta); err != nil {
		return nil, nil, fmt.Errorf("%w: model metadata of %q: %v", ErrNotReady, t.cfg.Model, err)
	}
	return sm, meta, nil
}

// checkMetadata applies the caps on tensors and dimensions.
func checkMetadata(m *oip.ModelMetadata) error {
	if n := len(m.Inputs); n > maxModelTensors {
		return fmt.Errorf("lists %d inputs; oipkit load handles at most %d", n, maxModelTensors)
	}
	if n := len(m.Outputs); n > maxModelTensors {
		return fmt.Errorf("lists %d outputs; oipkit load handles at most %d", n, maxModelTensors)
	}
	if len(m.Inputs) == 0 {
		return errors.New("lists no inputs")
	}
	for _, ts := range [][]oip.TensorMetadata{m.Inputs, m.Outputs} {
		for _, tm := range ts {
			if len(tm.Shape) > maxTensorDims {
				return fmt.Errorf("tensor %q has %d dimensions; oipkit load handles at most %d", tm.Name, len(tm.Shape), maxTensorDims)
			}
		}
	}
	return nil
}
