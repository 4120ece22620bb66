package report

import (
	"bytes"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
)

// irregular is n bytes with no run a generating command could describe.
func irregular(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// limitBodies are bodies of the shapes the suite's limit probes send.
func limitBodies() map[string][]byte {
	deep := `{"id":"oipkit","inputs":[{"data":` + strings.Repeat("[", 100000) + "1" + strings.Repeat("]", 100000) +
		`,"datatype":"INT32","name":"INPUT0","shape":[1]}]}`
	zeros := `{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1,9000000],"data":[` +
		strings.Repeat("0,", 8999999) + "0]}]}"
	nul := append([]byte(`{"x":1}`), make([]byte, 300000)...)
	mixed := bytes.Repeat([]byte("ab\n"), 40000) // a unit with a newline: one byte at a time won't do, literal too long
	return map[string][]byte{"nested 100,000 deep": []byte(deep), "9,000,000 zeros": []byte(zeros),
		"NUL bytes": nul, "irregular": irregular(100000), "unit with a newline": mixed}
}

// TestGeneratorCommandWritesTheBody runs each generating command in bash
// and sh and compares what it writes with the body, byte for byte; a body
// it cannot describe shortly gets no command.
func TestGeneratorCommandWritesTheBody(t *testing.T) {
	for name, body := range limitBodies() {
		t.Run(name, func(t *testing.T) {
			cmd := generatorCommand(body)
			if name == "irregular" || name == "unit with a newline" {
				if cmd != "" {
					t.Fatalf("a command for a body without short runs: %.200s", cmd)
				}
				return
			}
			if cmd == "" || len(cmd) > maxGenerator {
				t.Fatalf("no command (or %d bytes) for a %d-byte body of long runs", len(cmd), len(body))
			}
			for _, shell := range []string{"bash", "sh"} {
				out, err := exec.Command(shell, "-c", cmd).Output()
				if err != nil {
					t.Fatalf("%s: %v\n%s", shell, err, cmd)
				}
				if !bytes.Equal(out, body) {
					t.Fatalf("%s: wrote %d bytes, want %d (equal: %v)\n%s", shell, len(out), len(body), bytes.Equal(out, body), cmd)
				}
			}
		})
	}
}

// TestLargeReproducerIsExact: a request over MaxReproducerBody made of
// long runs gets a reproducer that is not marked NOT EXACT, over REST and
// over gRPC.
func TestLargeReproducerIsExact(t *testing.T) {
	body := limitBodies()["nested 100,000 deep"]
	rest := ReproduceExact(&Evidence{Request: Message{Method: "POST", Target: "/v2/models/add_sub/infer",
		Header: map[string][]string{"Content-Type": {"application/json"}}, BodyBytes: len(body)}}, Targets{}, body)
	if strings.Contains(rest, "NOT EXACT") || !strings.Contains(rest, "--data-binary @-") || len(rest) > maxGenerator+1024 {
		t.Errorf("REST reproducer of a %d-byte body:\n%.600s", len(body), rest)
	}
	msg := []byte(`{"modelName":"identity_uint8","rawInputContents":["` + strings.Repeat("A", 90000000/100) + `"]}`)
	grpc := ReproduceExact(&Evidence{Request: Message{Method: "RPC", Target: "/inference.GRPCInferenceService/ModelInfer"}}, Targets{}, msg)
	if strings.Contains(grpc, "NOT EXACT") || !strings.Contains(grpc, "|\n  grpcurl") {
		t.Errorf("gRPC reproducer of a %d-byte message:\n%.600s", len(msg), grpc)
	}
}

// FuzzGeneratorCommand: whatever body, the command (when there is one)
// writes exactly that body; the oracle is the body itself.
func FuzzGeneratorCommand(f *testing.F) {
	f.Add([]byte("[[["), uint16(300), []byte("]"), uint16(300))
	f.Add([]byte("0,"), uint16(500), []byte{0}, uint16(1000))
	f.Fuzz(func(t *testing.T, a []byte, na uint16, b []byte, nb uint16) {
		if len(a) > 20 || len(b) > 20 {
			return
		}
		body := append(bytes.Repeat(a, int(na)), bytes.Repeat(b, int(nb))...)
		segs := bodySegments(body)
		var got []byte
		for _, s := range segs {
			if s.unit == nil {
				got = append(got, s.lit...)
			} else {
				got = append(got, bytes.Repeat(s.unit, s.n)...)
			}
		}
		if segs != nil && !bytes.Equal(got, body) {
			t.Fatalf("segments rebuild %q, want %q", got, body)
		}
		for _, s := range segs {
			if s.unit != nil && len(s.unit) > 1 && !repeatableUnit(s.unit) {
				t.Fatalf("unit %q cannot go through yes", s.unit)
			}
		}
	})
}
