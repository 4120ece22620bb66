package browser

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// The DevTools protocol over chromium's --remote-debugging-pipe: chromium
// reads commands from file descriptor 3 and writes answers and events to
// descriptor 4, each message a JSON object followed by a NUL byte. A pipe
// needs no port, no WebSocket and no library: the page checks need a dozen
// commands and three events, and importers of oipkit do not inherit a
// browser-automation module for them.

// devtools is one chromium process and its protocol connection.
type devtools struct {
	cmd *exec.Cmd
	out io.WriteCloser // chromium's descriptor 3

	mu      sync.Mutex // guards what follows, and writes to out
	next    int64
	pending map[int64]chan message
	closed  error // set once the connection is gone
	onEvent func(method string, params json.RawMessage)
	done    chan struct{} // closed when the read loop ends
}

// message is a command's answer or an event.
type message struct {
	ID        int64           `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// startDevtools starts exe with args and --remote-debugging-pipe. onEvent
// sees every event, on the read loop's goroutine: it must only record.
func startDevtools(exe string, args []string, onEvent func(string, json.RawMessage)) (*devtools, error) {
	cmdR, cmdW, err := os.Pipe() // commands: we write, chromium reads (fd 3)
	if err != nil {
		return nil, err
	}
	evR, evW, err := os.Pipe() // answers and events: chromium writes (fd 4)
	if err != nil {
		cmdR.Close()
		cmdW.Close()
		return nil, err
	}
	cmd := exec.Command(exe, append(args, "--remote-debugging-pipe")...)
	cmd.ExtraFiles = []*os.File{cmdR, evW}
	if err := cmd.Start(); err != nil {
		for _, f := range []*os.File{cmdR, cmdW, evR, evW} {
			f.Close()
		}
		return nil, fmt.Errorf("start %s: %w", exe, err)
	}
	// Chromium's ends stay open in chromium only: the read loop then sees
	// EOF when chromium exits.
	cmdR.Close()
	evW.Close()
	d := &devtools{cmd: cmd, out: cmdW, pending: map[int64]chan message{}, onEvent: onEvent, done: make(chan struct{})}
	go d.read(evR)
	return d, nil
}

func (d *devtools) read(r io.ReadCloser) {
	defer close(d.done)
	defer r.Close()
	br := bufio.NewReaderSize(r, 1<<20)
	var err error
	for {
		var b []byte
		if b, err = br.ReadBytes(0); err != nil {
			break
		}
		var m message
		if err = json.Unmarshal(b[:len(b)-1], &m); err != nil {
			err = fmt.Errorf("devtools message: %w", err)
			break
		}
		if m.ID == 0 {
			if d.onEvent != nil && m.Method != "" {
				d.onEvent(m.Method, m.Params)
			}
			continue
		}
		d.mu.Lock()
		ch := d.pending[m.ID]
		delete(d.pending, m.ID)
		d.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
	if errors.Is(err, io.EOF) {
		err = errors.New("chromium closed the devtools pipe")
	}
	d.mu.Lock()
	d.closed = err
	for id, ch := range d.pending {
		close(ch)
		delete(d.pending, id)
	}
	d.mu.Unlock()
}

// call sends method with params in session (the browser's own when "")
// and decodes its result into result (unless nil).
func (d *devtools) call(ctx context.Context, session, method string, params, result any) error {
	p, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	ch := make(chan message, 1)
	d.mu.Lock()
	if d.closed != nil {
		d.mu.Unlock()
		return fmt.Errorf("%s: %w", method, d.closed)
	}
	d.next++
	id := d.next
	d.pending[id] = ch
	b, err := json.Marshal(message{ID: id, Method: method, SessionID: session, Params: p})
	if err == nil {
		_, err = d.out.Write(append(b, 0))
	}
	if err != nil {
		delete(d.pending, id)
	}
	d.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case m, ok := <-ch:
		if !ok {
			d.mu.Lock()
			err := d.closed
			d.mu.Unlock()
			return fmt.Errorf("%s: %w", method, err)
		}
		if m.Error != nil {
			return fmt.Errorf("%s: %s (%d)", method, m.Error.Message, m.Error.Code)
		}
		if result == nil {
			return nil
		}
		if err := json.Unmarshal(m.Result, result); err != nil {
			return fmt.Errorf("%s: result: %w", method, err)
		}
		return nil
	case <-ctx.Done():
		d.mu.Lock()
		delete(d.pending, id)
		d.mu.Unlock()
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// close asks chromium to exit, and kills it if it has not within a few
// seconds.
func (d *devtools) close(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = d.call(ctx, "", "Browser.close", struct{}{}, nil)
	d.out.Close()
	exited := make(chan struct{})
	go func() {
		d.cmd.Wait()
		close(exited)
	}()
	select {
	case <-exited:
	case <-ctx.Done():
		d.cmd.Process.Kill()
		<-exited
	}
	<-d.done
}
