package oiptarget

import (
	"fmt"
	"time"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/loadgen"
)

// The OIP target's defaults.
const (
	DefaultTimeout      = 10 * time.Second // per request
	DefaultReadyTimeout = 30 * time.Second // for server and model readiness
	DefaultStringLength = 16               // of synthesized BYTES elements
)

// Normalize fills the OIP target's defaults in cfg (Target, Inputs and the
// OIP side of Streaming and Sequence) and checks them, then normalizes the
// engine's part ([loadgen.Config.Normalize]). Like it, it can be called
// again on its own output; its errors wrap [loadgen.ErrConfig] and name
// the configuration's fields.
func Normalize(cfg *loadgen.Config) error {
	if err := normalizeTarget(&cfg.Target); err != nil {
		return err
	}
	if err := normalizeInputs(&cfg.Inputs); err != nil {
		return err
	}
	if err := normalizeStreaming(cfg); err != nil {
		return err
	}
	if cfg.Streaming != nil && cfg.Inputs.SharedMemory == SharedMemorySystem {
		return configErr("Inputs.SharedMemory system applies to single requests; Config.Streaming sends its inputs in each streamed request")
	}
	if cfg.Sequence != nil {
		switch {
		case cfg.Inputs.Validate:
			return configErr("Inputs.Validate does not apply to sequences: a stateful model's outputs depend on the requests before")
		case cfg.Streaming != nil && !cfg.Target.Protocol.IsGRPC():
			return configErr("sequences on streams need gRPC ModelStreamInfer (Target.GRPC): generate_stream requests carry no sequence")
		}
	}
	return cfg.Normalize()
}

func configErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", loadgen.ErrConfig, fmt.Sprintf(format, args...))
}

// normalizeStreaming checks the OIP settings of a streaming run: which
// transport streams how (gRPC ModelStreamInfer, REST generate_stream).
func normalizeStreaming(c *loadgen.Config) error {
	s := c.Streaming
	if s == nil {
		return nil
	}
	switch {
	case s.Responses < 0:
		return configErr("Streaming.Responses must be at least 0, got %d", s.Responses)
	case c.Inputs.Validate:
		return configErr("Inputs.Validate does not apply to Config.Streaming: a stream's responses are counted and timed, not compared")
	case c.Target.Protocol == client.ProtocolHTTPBinary:
		return configErr("Config.Streaming over REST uses generate_stream, whose requests are JSON: use Target.Protocol http")
	case c.Target.Protocol.IsGRPC() && s.TextInput != "":
		return configErr("Streaming.TextInput is the prompt of REST generate_stream: over gRPC give the inputs with Inputs.File or Inputs.Data")
	case !c.Target.Protocol.IsGRPC() && s.Responses > 0:
		return configErr("Streaming.Responses applies to gRPC streams; a generate_stream request ends with its event stream")
	case !c.Target.Protocol.IsGRPC() && c.Inputs.File != "":
		return configErr("Inputs.File does not apply to REST streaming: generate_stream takes a prompt, Streaming.TextInput")
	}
	shape, err := client.ParseStreamShape(string(s.Shape))
	if err != nil {
		return configErr("Streaming.Shape: %v", err)
	}
	if !c.Target.Protocol.IsGRPC() && shape != client.StreamShapeAuto {
		return configErr("Streaming.Shape applies to gRPC ModelStreamInfer; REST streaming is generate_stream")
	}
	if shape == client.StreamShapeAuto {
		shape = ""
	}
	s.Shape = shape
	if !c.Target.Protocol.IsGRPC() && s.TextInput == "" {
		s.TextInput = DefaultPrompt
	}
	return nil
}

func normalizeTarget(t *loadgen.TargetConfig) error {
	switch {
	case t.HTTP != "" && t.GRPC != "":
		return configErr("give one of Target.HTTP and Target.GRPC")
	case t.HTTP == "" && t.GRPC == "":
		return configErr("give a target: Target.HTTP HOST:PORT or Target.GRPC HOST:PORT")
	}
	if t.HTTP != "" {
		u, err := client.HTTPBaseURL(t.HTTP)
		if err != nil {
			return configErr("Target.HTTP: %v", err)
		}
		t.HTTP = u
	}
	if t.MetricsURL != "" {
		u, err := MetricsURL(t.MetricsURL)
		if err != nil {
			return configErr("Target.MetricsURL: %v", err)
		}
		t.MetricsURL = u
	}
	if t.GRPC != "" {
		a, err := client.GRPCAddress(t.GRPC)
		if err != nil {
			return configErr("Target.GRPC: %v", err)
		}
		t.GRPC = a
	}
	if t.Protocol == "" {
		t.Protocol = client.ProtocolHTTP
		if t.GRPC != "" {
			t.Protocol = client.ProtocolGRPCRaw
		}
	}
	if _, err := client.ParseProtocol(string(t.Protocol)); err != nil {
		return configErr("%v", err)
	}
	if t.Protocol.IsGRPC() != (t.GRPC != "") {
		return configErr("protocol %s needs %s", t.Protocol, map[bool]string{true: "Target.GRPC", false: "Target.HTTP"}[t.Protocol.IsGRPC()])
	}
	if t.Model == "" {
		return configErr("give a model: Target.Model NAME")
	}
	for _, d := range []struct {
		name string
		v    *loadgen.Duration
		def  time.Duration
	}{{"timeout", &t.Timeout, DefaultTimeout}, {"ready timeout", &t.ReadyTimeout, DefaultReadyTimeout}} {
		switch {
		case *d.v < 0:
			return configErr("%s must be positive, got %v", d.name, *d.v)
		case *d.v == 0:
			*d.v = loadgen.Duration(d.def)
		}
	}
	if t.Connections < 0 {
		return configErr("connections must be positive, got %d", t.Connections)
	}
	return nil
}

func normalizeInputs(in *loadgen.InputConfig) error {
	switch in.Data {
	case "":
		in.Data = "random"
	case "random", "zero":
	default:
		return configErr("unknown Inputs.Data %q (want random or zero)", in.Data)
	}
	switch {
	case in.StringLength < 0:
		return configErr("string length must be positive, got %d", in.StringLength)
	case in.StringLength == 0:
		in.StringLength = DefaultStringLength
	}
	if in.Seed == 0 {
		in.Seed = 1
	}
	if err := normalizeCheckEvery(in); err != nil {
		return err
	}
	if _, err := parseShapes(in.Shapes); err != nil {
		return err
	}
	switch in.SharedMemory {
	case "":
		in.SharedMemory = SharedMemoryNone
	case SharedMemoryNone, SharedMemorySystem:
	case SharedMemoryCUDA:
		return configErr("Inputs.SharedMemory cuda is not supported (no GPU support); use system or none")
	default:
		return configErr("unknown Inputs.SharedMemory %q (want none or system)", in.SharedMemory)
	}
	switch {
	case in.OutputSharedMemorySize < 0:
		return configErr("Inputs.OutputSharedMemorySize must be positive, got %d", in.OutputSharedMemorySize)
	case in.OutputSharedMemorySize == 0:
		in.OutputSharedMemorySize = DefaultOutputSharedMemorySize
	}
	if in.SharedMemory == SharedMemorySystem && in.Validate {
		return configErr("Inputs.Validate checks the outputs in each response; with Inputs.SharedMemory system they are written to regions that concurrent requests share, so the two cannot be combined")
	}
	return nil
}
