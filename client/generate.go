package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"time"

	"github.com/oipkit/oipkit/oip"
)

// Text generation over REST (Triton's generate extension): Generate posts
// to /generate and reads one JSON answer; GenerateStream posts to
// /generate_stream and reads its server-sent events.

// GenerateRequest is a generate request.
type GenerateRequest struct {
	Model, Version string
	// ID is echoed in the answer when set.
	ID        string
	TextInput string
	// Parameters go in the request's "parameters" object.
	Parameters oip.Parameters
}

// GenerateResponse is one generate answer or one streamed event.
type GenerateResponse struct {
	ID         string `json:"id"`
	Model      string `json:"model_name"`
	Version    string `json:"model_version"`
	TextOutput string `json:"text_output"`
}

// ErrStreamEvent is wrapped by the *Error of an event {"error": …} received
// after a generate stream started: the server failed mid-stream (its HTTP
// status was already 200).
var ErrStreamEvent = errors.New("error event in the stream")

// MaxEventBytes bounds one server-sent event (its data lines together) and
// one line of the stream; a longer one ends the stream with an error.
const MaxEventBytes = 1 << 20

func (r GenerateRequest) body() ([]byte, error) {
	m := map[string]any{"text_input": r.TextInput}
	if r.ID != "" {
		m["id"] = r.ID
	}
	if len(r.Parameters) > 0 {
		if err := r.Parameters.Validate(); err != nil {
			return nil, err
		}
		m["parameters"] = r.Parameters
	}
	return json.Marshal(m)
}

func (c *REST) generateURL(r GenerateRequest, route string) (*url.URL, error) {
	return url.Parse(c.base + modelPath(r.Model, r.Version) + "/" + route)
}

// Generate posts a generate request and decodes the answer.
func (c *REST) Generate(ctx context.Context, r GenerateRequest) (*GenerateResponse, error) {
	const op = "Generate"
	body, err := r.body()
	if err != nil {
		return nil, &Error{Op: op, Err: fmt.Errorf("encode request: %w", err)}
	}
	u, err := c.generateURL(r, "generate")
	if err != nil {
		return nil, &Error{Op: op, Err: err}
	}
	raw, err := c.send(ctx, op, http.MethodPost, u, c.jsonHeader, c.opts.Host, body)
	if err != nil {
		return nil, err
	}
	if raw.Status != http.StatusOK {
		return nil, statusError(op, raw)
	}
	var out GenerateResponse
	if err := json.Unmarshal(raw.Body, &out); err != nil {
		return nil, &Error{Op: op, HTTPStatus: raw.Status, Message: "decode response: " + err.Error(), Body: raw.Body, Err: err}
	}
	return &out, nil
}

// GenerateStream is one generate_stream answer being read.
type GenerateStream struct {
	resp   *http.Response
	rd     *bufio.Reader
	cancel context.CancelFunc
}

// GenerateStream posts a generate_stream request. An error status (an
// error before streaming) is returned as *Error; otherwise events are read
// with Recv. The client's Timeout bounds only the wait for the answer's
// headers; ctx bounds the whole stream. Close it when done.
func (c *REST) GenerateStream(ctx context.Context, r GenerateRequest) (*GenerateStream, error) {
	const op = "GenerateStream"
	body, err := r.body()
	if err != nil {
		return nil, &Error{Op: op, Err: fmt.Errorf("encode request: %w", err)}
	}
	u, err := c.generateURL(r, "generate_stream")
	if err != nil {
		return nil, &Error{Op: op, Err: err}
	}
	ctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		cancel()
		return nil, &Error{Op: op, Err: err}
	}
	req.Header = c.jsonHeader.Clone()
	req.Header.Set("Accept", "text/event-stream")
	req.Host = c.opts.Host
	headers := time.AfterFunc(c.opts.Timeout, cancel)
	resp, err := c.hc.Do(req)
	if !headers.Stop() { // the timeout cancelled the request
		if resp != nil {
			resp.Body.Close()
		}
		err = fmt.Errorf("no answer within %s: %w", c.opts.Timeout, errors.Join(err, context.DeadlineExceeded))
	}
	if err != nil {
		cancel()
		return nil, &Error{Op: op, Err: transportError(ctx, err)}
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode != http.StatusOK || mt != "text/event-stream" {
		defer cancel()
		defer resp.Body.Close()
		b, err := readBody(resp, min(c.opts.MaxResponseBytes, MaxEventBytes))
		if err != nil && !errors.Is(err, ErrResponseTooLarge) {
			return nil, &Error{Op: op, HTTPStatus: resp.StatusCode, Err: err}
		}
		raw := &RawResponse{Status: resp.StatusCode, Header: resp.Header, Body: b}
		if resp.StatusCode == http.StatusOK {
			return nil, &Error{Op: op, HTTPStatus: resp.StatusCode, Header: resp.Header, Body: b,
				Message: fmt.Sprintf("Content-Type %q, want text/event-stream", resp.Header.Get("Content-Type"))}
		}
		return nil, statusError(op, raw)
	}
	return &GenerateStream{resp: resp, rd: bufio.NewReaderSize(resp.Body, 64<<10), cancel: cancel}, nil
}

// Recv returns the next event's answer; io.EOF at the end of the stream. An
// {"error": …} event is an *Error wrapping ErrStreamEvent.
func (s *GenerateStream) Recv() (*GenerateResponse, error) {
	const op = "GenerateStream"
	data, err := readEvent(s.rd)
	if err != nil {
		if err == io.EOF {
			return nil, io.EOF
		}
		return nil, &Error{Op: op, HTTPStatus: s.resp.StatusCode, Message: "read event: " + err.Error(), Err: err}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil || fields == nil {
		return nil, &Error{Op: op, HTTPStatus: s.resp.StatusCode, Message: fmt.Sprintf("event data is not a JSON object: %.200q", data), Err: err}
	}
	if v, ok := fields["error"]; ok {
		e := &Error{Op: op, HTTPStatus: s.resp.StatusCode, Err: ErrStreamEvent, Body: data}
		if json.Unmarshal(v, &e.Message) != nil {
			e.Message = string(v)
		}
		return nil, e
	}
	var out GenerateResponse
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, &Error{Op: op, HTTPStatus: s.resp.StatusCode, Message: "decode event: " + err.Error(), Body: data, Err: err}
	}
	return &out, nil
}

// Close ends the stream.
func (s *GenerateStream) Close() error {
	s.cancel()
	return s.resp.Body.Close()
}

// readEvent reads one server-sent event and returns its data (data lines
// joined by "\n"), skipping events without data (comments, retry, id).
// Lines end in "\n" or "\r\n". io.EOF means the stream ended between events.
func readEvent(rd *bufio.Reader) ([]byte, error) {
	var data []byte
	hasData := false
	for {
		line, err := readLine(rd)
		if err != nil {
			if err == io.EOF && hasData {
				return data, nil // a last event without its blank line
			}
			return nil, err
		}
		if len(line) == 0 {
			if hasData {
				return data, nil
			}
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		if len(field) == 0 { // a comment
			continue
		}
		value = bytes.TrimPrefix(value, []byte(" "))
		if string(field) != "data" {
			continue // event, id, retry: not used by generate_stream
		}
		if hasData {
			data = append(data, '\n')
		}
		if len(data)+len(value) > MaxEventBytes {
			return nil, fmt.Errorf("server-sent event over %d bytes", MaxEventBytes)
		}
		data = append(data, value...)
		hasData = true
	}
}

// readLine reads one line without its end, at most MaxEventBytes.
func readLine(rd *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, isPrefix, err := rd.ReadLine()
		if err != nil {
			if err == io.EOF && len(line) > 0 {
				return line, nil
			}
			return nil, err
		}
		if len(line)+len(chunk) > MaxEventBytes {
			return nil, fmt.Errorf("server-sent event line over %d bytes", MaxEventBytes)
		}
		line = append(line, chunk...)
		if !isPrefix {
			return line, nil
		}
	}
}
