package oiptarget

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"

	"github.com/oipkit/oipkit/loadgen"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// ErrNotReady marks a target that could not be reached, or whose server or
// model did not become ready within the ready timeout; the CLI maps it to
// exit code 2.
var ErrNotReady = errors.New("target not ready")

// OIPTarget is the [Target] of an Open Inference Protocol server: it sends
// one model's inference requests, serialized once when the target is made,
// over REST (JSON or binary) or gRPC (typed or raw contents).
type OIPTarget struct {
	cfg      loadgen.TargetConfig
	ctl      client.Client // identify, readiness and metadata (bounded; see ready.go)
	data     client.Client // the requests
	rest     *client.REST
	grpc     *client.GRPC
	conn     grpc.ClientConnInterface // gRPC sequences, streams and the clock probe, with the pre-encoded codec
	md       metadata.MD              // gRPC metadata from Target.Headers
	callOpts []grpc.CallOption
	payloads []payload
	validate bool
	// checkEvery is the sample rule (see sample.go): 0 checks no answer in
	// full, 1 every answer (also with Inputs.Validate), N the first and every
	// N-th after it, counted in answers.
	checkEvery uint64
	answers    answerCount
	info       loadgen.TargetInfo
	tls        *tls.Config     // nil for plaintext
	shm        *sharedMemory   // Inputs.SharedMemory system; nil otherwise
	metrics    *metricsScraper // Target.MetricsURL; nil otherwise

	streaming *loadgen.StreamConfig // nil unless Config.Streaming
	pool      streamPool            // idle gRPC streams
	params    oip.Parameters        // request parameters (REST streaming sends them per request)
}

// payload is one distinct request, ready to send.
type payload struct {
	body      []byte                    // REST body
	headerLen int                       // REST Inference-Header-Content-Length, -1 for pure JSON
	post      *client.PreparedInfer     // REST: the whole request, serialized once
	keep      int64                     // REST: keep sampled bodies up to this size to check them
	keepRule  string                    // how keep was set, for the error of a larger answer
	call      *client.PreparedGRPCInfer // gRPC: the request, serialized once (sequences and streams start from its Message)
	inputs    []tensor.Tensor           // the request's inputs (REST sequences encode each request)
	expect    []tensor.Tensor           // outputs to validate against; nil: none
	expectRaw [][]byte                  // expect's raw encodings, made once
}

// NewTarget connects to the server in cfg, waits until the server and the
// model are ready (at most cfg.Target.ReadyTimeout), reads the model
// metadata, builds the inputs and serializes every distinct request once.
// Errors wrap ErrConfig (bad flags or input file) or ErrNotReady. The caller
// must Close the target.
func NewTarget(ctx context.Context, cfg loadgen.Config) (*OIPTarget, error) {
	if err := Normalize(&cfg); err != nil {
		return nil, err
	}
	tc := cfg.Target
	opts, err := clientOptions(cfg)
	if err != nil {
		return nil, err
	}
	t := &OIPTarget{cfg: tc, validate: cfg.Inputs.Validate, tls: opts.TLS, streaming: cfg.Streaming}
	t.checkEvery = uint64(*cfg.Inputs.CheckEvery)
	if t.validate {
		t.checkEvery = 1
	}
	addr := tc.HTTP
	if tc.Protocol.IsGRPC() {
		addr = tc.GRPC
	}
	c, err := client.New(addr, tc.Protocol, opts)
	if err != nil {
		return nil, configErr("%v", err)
	}
	t.data = c
	if t.ctl, err = controlClient(addr, tc.Protocol, opts); err != nil {
		c.Close()
		return nil, configErr("%v", err)
	}
	switch c := c.(type) {
	case *client.REST:
		t.rest = c
	case *client.GRPC:
		t.grpc = c
		t.conn = c.Conn()
		t.callOpts = []grpc.CallOption{grpc.ForceCodecV2(client.PreEncodedCodec{})}
		if len(opts.Header) > 0 {
			// The client's Context adds its metadata; take it from there
			// once rather than re-deriving it per request.
			cctx, cancel := c.Context(context.Background())
			t.md, _ = metadata.FromOutgoingContext(cctx)
			cancel()
		}
	}
	if err := t.setup(ctx, cfg); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

func clientOptions(cfg loadgen.Config) (client.Options, error) {
	tc := cfg.Target
	opts := client.Options{Timeout: tc.Timeout.D(), Host: tc.Host, Connections: tc.Connections,
		MaxResponseBytes: tc.MaxBodyBytes, MaxMessageBytes: tc.GRPCMaxMessageBytes, MaxHeaderBytes: tc.MaxHeaderBytes}
	if opts.Connections == 0 && !tc.Protocol.IsGRPC() {
		// One keep-alive connection per worker that can be in flight.
		w := cfg.Load.Concurrency
		if cfg.OpenLoop() {
			w = cfg.Load.MaxInFlight
		}
		opts.Connections = min(w, 1024)
	}
	if len(tc.Headers) > 0 {
		h, err := client.ParseHeaders(tc.Headers)
		if err != nil {
			return opts, configErr("%v", err)
		}
		opts.Header = h
	}
	tlsCfg, err := tc.TLSFiles.Config()
	if err != nil {
		return opts, configErr("%v", err)
	}
	opts.TLS = tlsCfg
	return opts, nil
}

func (t *OIPTarget) setup(ctx context.Context, cfg loadgen.Config) error {
	if err := t.waitReady(ctx, cfg.Target.ReadyTimeout.D(), cfg.Target.ReadyProgress); err != nil {
		return err
	}
	tc := cfg.Target
	sm, meta, err := t.describe(ctx)
	if err != nil {
		return err
	}
	t.info.Server, t.info.Model = *sm, *meta
	if err := t.openMetrics(ctx); err != nil {
		return err
	}

	var sets []inputSet
	if cfg.Inputs.File != "" {
		sets, err = readInputFile(cfg.Inputs.File, meta, cfg.Inputs)
		t.info.Validation = "validation_data"
	} else {
		sets, err = synthesize(meta, cfg.Inputs)
	}
	if err != nil {
		return err
	}
	params, err := parseParameters(cfg.Inputs.Parameters)
	if err != nil {
		return err
	}
	t.params = params
	if t.validate && (len(sets) == 0 || sets[0].expect == nil) {
		if err := fixtureExpectations(meta, tc.ModelVersion, params, sets); err != nil {
			return err
		}
		t.info.Validation = "fixture"
	}
	for _, in := range sets[0].inputs {
		t.info.Inputs = append(t.info.Inputs, loadgen.TensorInfo{Name: in.Name, Datatype: in.Datatype, Shape: in.Shape})
	}
	if cfg.Inputs.SharedMemory == SharedMemorySystem {
		if t.shm, err = newSharedMemory(t.ctl); err != nil {
			return err
		}
	}
	for i, set := range sets {
		p, err := t.encode(ctx, i, set, params, cfg.Inputs.OutputSharedMemorySize)
		if err != nil {
			return configErr("request %d: %v", i, err)
		}
		t.payloads = append(t.payloads, p)
		n := len(p.body)
		if p.call != nil {
			n = len(p.call.Message())
		}
		t.info.Bytes = append(t.info.Bytes, n)
	}
	t.info.Payloads = len(t.payloads)
	return nil
}

// encode serializes one request for the target's protocol.
// With shared memory, request i's inputs are placed in its regions first.
func (t *OIPTarget) encode(ctx context.Context, i int, set inputSet, params oip.Parameters, outSize int) (payload, error) {
	req := &oip.InferRequest{Model: t.cfg.Model, Version: t.cfg.ModelVersion, Parameters: params}
	for _, in := range set.inputs {
		req.Inputs = append(req.Inputs, oip.InferInput{Tensor: in})
	}
	if t.shm != nil {
		if err := t.shm.place(ctx, i, req, t.info.Model.Outputs, outSize); err != nil {
			return payload{}, fmt.Errorf("Inputs.SharedMemory system: %w", err)
		}
	}
	p := payload{expect: set.expect, inputs: set.inputs}
	for _, e := range set.expect {
		b, err := tensor.EncodeRaw(e)
		if err != nil {
			return p, fmt.Errorf("expected output %q: %w", e.Name, err)
		}
		p.expectRaw = append(p.expectRaw, b)
	}
	switch t.cfg.Protocol {
	case client.ProtocolHTTP, client.ProtocolHTTPBinary:
		bin := t.cfg.Protocol == client.ProtocolHTTPBinary
		body, hl, err := oip.EncodeRESTRequest(req, oip.RESTEncoding{BinaryInputs: bin, BinaryOutputs: bin})
		if err != nil {
			return p, err
		}
		p.body, p.headerLen = body, hl
		if p.post, err = t.rest.PrepareInfer(t.cfg.Model, t.cfg.ModelVersion, body, hl); err != nil {
			return p, err
		}
		if t.validate && p.expect != nil {
			if p.keep, err = keepLimit(p.expect, bin); err != nil {
				return p, err
			}
			p.keepRule = "16 times the expected outputs, plus 1 MiB"
		} else {
			p.keep = sampleKeep(t.info.Model.Outputs, len(body))
			p.keepRule = "16 times the answer the metadata and the request suggest, plus 1 MiB; Inputs.CheckEvery 0 checks framing only"
		}
	default:
		pb, err := oip.ToProtoRequest(req, t.cfg.Protocol == client.ProtocolGRPCRaw)
		if err != nil {
			return p, err
		}
		b, err := proto.Marshal(pb)
		if err != nil {
			return p, fmt.Errorf("marshal ModelInferRequest: %w", err)
		}
		if p.call, err = t.grpc.PrepareInfer(b); err != nil {
			return p, err
		}
	}
	return p, nil
}

// keepLimit is the largest answer kept to be validated: 16 times the
// expected outputs as this server would encode them, plus 1 MiB, room for
// verbose number formats, indentation and outputs not validated, while
// bounding what a misbehaving server can make each in-flight request hold
// (a larger answer fails the request).
func keepLimit(expect []tensor.Tensor, binary bool) (int64, error) {
	resp := &oip.InferResponse{Model: "m"}
	for _, e := range expect {
		resp.Outputs = append(resp.Outputs, oip.InferOutput{Tensor: e})
	}
	b, _, err := oip.EncodeRESTResponse(resp, func(string) bool { return binary })
	if err != nil {
		return 0, fmt.Errorf("expected outputs: %w", err)
	}
	return 16*int64(len(b)) + 1<<20, nil
}

// Info describes the server, model and payloads.
func (t *OIPTarget) Info() loadgen.TargetInfo { return t.info }

// Do sends request seq: payload seq mod the number of payloads. Every
// answer's framing is checked: REST status, lengths and chunking, and the
// binary Inference-Header-Content-Length against the body
// (client.PreparedInfer), gRPC's HTTP/2 and message framing and its status
// (client.PreparedGRPCInfer). The body is kept only when the answer is
// sampled (see sample.go), to be decoded and checked against the model's
// metadata, and with Inputs.Validate against the expected outputs.
func (t *OIPTarget) Do(ctx context.Context, seq uint64) error {
	p := &t.payloads[seq%uint64(len(t.payloads))]
	check := t.sampled()
	if p.post != nil {
		var keep int64
		if check {
			keep = p.keep
		}
		a, err := p.post.Send(ctx, keep)
		return t.restOutcome(p, keep, a, err)
	}
	b, err := p.call.Send(ctx, check)
	if err != nil || !check {
		return err
	}
	r, err := decodeGRPCAnswer(b)
	if err != nil {
		return err
	}
	return t.checkAnswer(p, r)
}

// restOutcome is the outcome of a REST request sent keeping keep bytes of
// its answer: the answer checked when it was kept.
func (t *OIPTarget) restOutcome(p *payload, keep int64, a client.InferAnswer, err error) error {
	if err != nil && keep > 0 && errors.Is(err, client.ErrResponseTooLarge) {
		return &loadgen.ValidationError{Detail: fmt.Sprintf("the answer is larger than %d bytes, too large to check (%s): %v", keep, p.keepRule, err)}
	}
	if err != nil || keep == 0 {
		return err
	}
	r, err := oip.DecodeRESTResponse(a.Body, a.HeaderLen)
	if err != nil {
		return notInference("%v", err)
	}
	return t.checkAnswer(p, r)
}

const modelInferMethod = inferencepb.GRPCInferenceService_ModelInfer_FullMethodName

// checkAnswer checks a sampled answer against the model's metadata and,
// with Inputs.Validate, against the expected outputs.
func (t *OIPTarget) checkAnswer(p *payload, r *oip.InferResponse) error {
	if err := checkAnswer(t.info.Model.Outputs, r); err != nil {
		return err
	}
	if t.validate && p.expect != nil {
		return checkOutputs(p.expect, p.expectRaw, r)
	}
	return nil
}

// Close releases the target's connections.
func (t *OIPTarget) Close() error {
	t.pool.close()
	t.metrics.close()
	var err error
	if t.shm != nil {
		// Before the clients close: unregistering needs one.
		err = t.shm.Close()
	}
	for _, c := range []client.Client{t.ctl, t.data} {
		if c != nil {
			err = errors.Join(err, c.Close())
		}
	}
	return err
}
