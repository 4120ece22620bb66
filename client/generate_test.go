package client_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference/referencetest"
)

func TestGenerateOverReference(t *testing.T) {
	srv := referencetest.Start(t)
	c, err := client.NewREST(srv.HTTPURL(), false, client.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	r, err := c.Generate(ctx, client.GenerateRequest{Model: "text_gen", ID: "g1", TextInput: "one two three", Parameters: oip.Parameters{"max_tokens": int64(2)}})
	if err != nil || r.ID != "g1" || r.Model != "text_gen" || r.TextOutput != "one two " {
		t.Fatalf("Generate = %+v, %v", r, err)
	}
	_, err = c.Generate(ctx, client.GenerateRequest{Model: "add_sub", TextInput: "x"})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.HTTPStatus != http.StatusBadRequest || ce.Message == "" {
		t.Fatalf("Generate on add_sub = %v", err)
	}

	st, err := c.GenerateStream(ctx, client.GenerateRequest{Model: "text_gen", TextInput: "a b c", Parameters: oip.Parameters{"fail_after": int64(2)}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var text string
	for {
		ev, err := st.Recv()
		if err != nil {
			if !errors.Is(err, client.ErrStreamEvent) || !strings.Contains(err.Error(), "failed after 2") {
				t.Fatalf("Recv after %q: %v, want the error event", text, err)
			}
			break
		}
		text += ev.TextOutput
	}
	if text != "a b " {
		t.Fatalf("streamed %q", text)
	}
	if _, err := st.Recv(); err != io.EOF {
		t.Fatalf("after the last event: %v, want EOF", err)
	}
	_, err = c.GenerateStream(ctx, client.GenerateRequest{Model: "does_not_exist", TextInput: "x"})
	if !errors.As(err, &ce) || ce.HTTPStatus != http.StatusNotFound {
		t.Fatalf("GenerateStream on an unknown model = %v", err)
	}
}

// A server whose event never ends is cut off at MaxEventBytes.
func TestGenerateStreamBoundsEvents(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		bw := bufio.NewWriter(w)
		bw.WriteString(": comment\n\ndata: {\"text_output\":\"a\"}\r\n\r\ndata: ")
		for range client.MaxEventBytes / 1000 * 2 {
			bw.WriteString(strings.Repeat("x", 1000))
		}
		bw.Flush()
	}))
	defer hs.Close()
	c, err := client.NewREST(hs.URL, false, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.GenerateStream(context.Background(), client.GenerateRequest{Model: "m", TextInput: "x"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if ev, err := st.Recv(); err != nil || ev.TextOutput != "a" {
		t.Fatalf("first event %+v %v", ev, err)
	}
	if _, err := st.Recv(); err == nil || !strings.Contains(err.Error(), "over") {
		t.Fatalf("oversized event: %v", err)
	}
}
