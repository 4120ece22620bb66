//go:build linux

package client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// Sizes of the event loop.
const (
	loopReadSize = 64 << 10               // the loop's one read buffer
	loopEvents   = 256                    // events taken per epoll_wait
	loopTick     = 10 * time.Millisecond  // how often deadlines are looked at
	loopWakeSlot = -1                     // the wake pipe's epoll data
	loopWait     = 2 * time.Millisecond   // the longest wait for events (see wait)
	loopPark     = 100 * time.Millisecond // how long a raw wait that timed out makes the loop park
)

// Connection states.
const (
	lcNone    = iota // no connection (the slot has none yet, or retired)
	lcDialing        // connect in progress: waiting for EPOLLOUT
	lcQueued         // waiting for one of maxDials connects
	lcWriting        // the request is partly written: waiting for EPOLLOUT
	lcReading        // waiting for the answer
	lcHanded         // the blocking path reads the answer on a goroutine
	lcRetired        // the driver retired the slot
)

// loopConn is one slot: its connection and its request in flight.
type loopConn struct {
	fd       int
	state    uint8
	reused   bool // the connection carried a request before
	retried  bool // the request is sent a second time (stale connection)
	keep     int64
	max      int64
	wire     []byte // what is left to write
	request  []byte // the whole request, to send again
	start    time.Time
	deadline time.Time
	ans      loopAnswer
}

// handBack is the outcome of an answer the blocking path read.
type handBack struct {
	slot     int
	a        InferAnswer
	errBody  []byte
	started  bool
	reusable bool
	err      error
	fd       int // the connection, -1 when it was closed
}

type eventLoop struct {
	h         *http1Client
	d         LoopDriver
	ctx       context.Context
	epfd      int
	epf       *os.File        // owns epfd
	epRaw     syscall.RawConn // epf's: Go's poller waits on epfd (see wait)
	lookFn    func(uintptr) bool
	looked    int // what look found
	lookErr   error
	now       time.Time // when the loop last woke
	parkUntil time.Time // until then the loop waits in Go's poller (see wait)
	yielded   time.Time // when the loop last yielded its processor
	wake      [2]int    // a pipe: a byte written wakes epoll_wait
	sa        syscall.Sockaddr
	family    int
	conns     []loopConn
	buf       []byte
	events    []syscall.EpollEvent
	parser    *headParser

	active  int   // slots not retired
	dialing int   // connects in progress
	queued  []int // slots waiting to connect
	handed  int   // answers on the blocking path
	ready   []int // slots whose next request is due
	spare   []int // ready's other buffer

	mu   sync.Mutex
	back []handBack // answers the blocking path finished
}

// loop is REST.Loop over plain HTTP/1.1.
func (h *http1Client) loop(ctx context.Context, n int, d LoopDriver) error {
	for i := range n { // the loop's connections count against Connections
		select {
		case h.slots <- struct{}{}:
		default:
			for range i {
				<-h.slots
			}
			return ErrNoEventLoop
		}
	}
	defer func() {
		for range n {
			<-h.slots
		}
	}()
	l, err := newEventLoop(ctx, h, n, d)
	if err != nil {
		return ErrNoEventLoop // the blocking path reports what is wrong, per request
	}
	defer l.close()
	l.run()
	return nil
}

func newEventLoop(ctx context.Context, h *http1Client, n int, d LoopDriver) (*eventLoop, error) {
	ap, err := resolveAddrPort(ctx, h.addr)
	if err != nil {
		return nil, err
	}
	l := &eventLoop{h: h, d: d, ctx: ctx, conns: make([]loopConn, n), active: n,
		buf: make([]byte, loopReadSize), events: make([]syscall.EpollEvent, loopEvents),
		parser: newHeadParser(h.maxHeader), epfd: -1, wake: [2]int{-1, -1}}
	for i := range l.conns {
		l.conns[i].fd = -1 // before any l.close
	}
	if ap.Addr().Is4() {
		l.family, l.sa = syscall.AF_INET, &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	} else {
		l.family, l.sa = syscall.AF_INET6, &syscall.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
	}
	if l.epfd, err = syscall.EpollCreate1(syscall.EPOLL_CLOEXEC); err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	// Go's poller may watch the epoll descriptor (see wait); the file owns it.
	if err = syscall.SetNonblock(l.epfd, true); err != nil {
		syscall.Close(l.epfd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	l.epf = os.NewFile(uintptr(l.epfd), "epoll")
	if l.epRaw, err = l.epf.SyscallConn(); err != nil {
		l.epf.Close()
		return nil, err
	}
	l.lookFn = l.look // made once: a method value allocates
	if err = syscall.Pipe2(l.wake[:], syscall.O_NONBLOCK|syscall.O_CLOEXEC); err != nil {
		l.close()
		return nil, os.NewSyscallError("pipe2", err)
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: loopWakeSlot}
	if err = syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, l.wake[0], &ev); err != nil {
		l.close()
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	// Connections an earlier loop left healthy carry the first requests.
	h.mu.Lock()
	for i := range l.conns {
		k := len(h.loopIdle)
		if k == 0 {
			break
		}
		l.conns[i].fd, l.conns[i].reused = h.loopIdle[k-1], true
		h.loopIdle = h.loopIdle[:k-1]
		if err := l.ctl(syscall.EPOLL_CTL_ADD, i, syscall.EPOLLIN); err != nil {
			syscall.Close(l.conns[i].fd)
			l.conns[i].fd, l.conns[i].reused = -1, false
		}
	}
	h.mu.Unlock()
	return l, nil
}

// resolveAddrPort resolves host:port to one address, preferring IPv4 as
// Go's dialer tries it first for localhost.
func resolveAddrPort(ctx context.Context, addr string) (netip.AddrPort, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return netip.AddrPort{}, err
	}
	p, err := net.DefaultResolver.LookupPort(ctx, "tcp", port)
	if err != nil {
		return netip.AddrPort{}, err
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return netip.AddrPort{}, fmt.Errorf("resolve %s: %v", host, err)
	}
	ip := ips[0]
	for _, a := range ips {
		if a.Unmap().Is4() {
			ip = a
			break
		}
	}
	return netip.AddrPortFrom(ip.Unmap(), uint16(p)), nil
}

// close releases the loop; healthy idle connections go back to the client
// for the next loop.
func (l *eventLoop) close() {
	keep := l.ctx.Err() == nil
	l.h.mu.Lock()
	for i := range l.conns {
		c := &l.conns[i]
		if c.fd < 0 {
			continue
		}
		if keep && c.state == lcRetired && !l.h.closed {
			l.h.loopIdle = append(l.h.loopIdle, c.fd)
		} else {
			syscall.Close(c.fd)
		}
		c.fd = -1
	}
	l.h.mu.Unlock()
	if l.epf != nil {
		l.epf.Close()
	}
	for _, fd := range []int{l.wake[0], l.wake[1]} {
		if fd >= 0 {
			syscall.Close(fd)
		}
	}
}

func (l *eventLoop) ctl(op, slot int, events uint32) error {
	ev := syscall.EpollEvent{Events: events, Fd: int32(slot)}
	return syscall.EpollCtl(l.epfd, op, l.conns[slot].fd, &ev)
}

// run sends until every slot is retired, or ctx ends.
func (l *eventLoop) run() {
	stop := context.AfterFunc(l.ctx, l.wakeUp)
	defer stop()
	for i := range l.conns {
		l.ready = append(l.ready, i)
	}
	l.now = time.Now()
	lastTick := l.now
	for {
		for len(l.ready) > 0 && l.ctx.Err() == nil {
			batch := l.ready
			l.ready = l.spare[:0]
			for _, slot := range batch {
				l.next(slot)
			}
			l.spare = batch[:0]
		}
		if l.ctx.Err() != nil {
			l.endAll(&Error{Op: "Infer", Err: context.Cause(l.ctx)})
			return
		}
		if l.active == 0 {
			return
		}
		k, err := 0, error(nil)
		if len(l.ready) == 0 {
			k, err = l.wait()
		}
		if err != nil {
			l.endAll(&Error{Op: "Infer", Err: err})
			return
		}
		l.now = time.Now()
		for _, ev := range l.events[:max(k, 0)] {
			if ev.Fd == loopWakeSlot {
				l.drainWake()
				continue
			}
			l.event(int(ev.Fd), ev.Events)
		}
		l.takeBack()
		l.yield(k == 0)
		if l.now.Sub(lastTick) >= loopTick {
			lastTick = l.now
			l.expire(l.now)
		}
	}
}

// wait returns the events that came, waiting at most loopWait for the
// first.
//
// The wait holds the goroutine's processor: epoll_wait is a raw system
// call, which Go's scheduler does not see. Through syscall.EpollWait the
// runtime's monitor would take the processor away after 20 µs of waiting
// and the loop would take one back on every return — tens of thousands of
// hand-offs a second, each waking a thread on the other core, which cost a
// fifth of the throughput against wrk (parking in Go's poller, a third).
// But a processor held that way runs nothing else: a server in the same
// process (a test's, a library user's) could answer only when the loop
// yields. So a raw wait that times out — nothing came for loopWait, the
// server is idle, slow, or waiting for this very processor — makes the loop
// park in Go's own poller, which watches the epoll descriptor, for the next
// loopPark; answers handed to the blocking path, which need a processor
// too, make it park while any is out.
func (l *eventLoop) wait() (int, error) {
	if l.handed == 0 && l.now.After(l.parkUntil) {
		for {
			r, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(l.epfd),
				uintptr(unsafe.Pointer(&l.events[0])), uintptr(len(l.events)), uintptr(loopWait/time.Millisecond), 0, 0)
			switch e {
			case 0:
				if r == 0 {
					l.parkUntil = time.Now().Add(loopPark)
				}
				return int(r), nil
			case syscall.EINTR: // a signal: often the runtime asking the goroutine to stop
				l.yield(true)
				continue
			}
			return 0, os.NewSyscallError("epoll_wait", e)
		}
	}
	if !l.look(uintptr(l.epfd)) {
		l.epf.SetReadDeadline(time.Now().Add(loopWait))
		if err := l.epRaw.Read(l.lookFn); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			return 0, err
		}
	}
	if l.lookErr != nil {
		return 0, os.NewSyscallError("epoll_wait", l.lookErr)
	}
	return l.looked, nil
}

// look takes the events there are without waiting; it reports whether
// there were any (or an error), as syscall.RawConn.Read's callback.
func (l *eventLoop) look(fd uintptr) bool {
	for {
		k, err := syscall.EpollWait(int(fd), l.events, 0)
		if err != syscall.EINTR {
			l.looked, l.lookErr = max(k, 0), err
			return k != 0 || err != nil
		}
	}
}

// yield lets the run's other goroutines have the processor the loop holds:
// when asked, or at least once per loopWait.
func (l *eventLoop) yield(now bool) {
	if now || l.now.Sub(l.yielded) >= loopWait {
		runtime.Gosched()
		l.yielded = l.now
	}
}

func epollError(err error) error {
	if err != nil {
		return os.NewSyscallError("epoll_wait", err)
	}
	return nil
}

func (l *eventLoop) wakeUp() {
	syscall.Write(l.wake[1], []byte{0})
}

func (l *eventLoop) drainWake() {
	var b [64]byte
	for {
		if n, _ := syscall.Read(l.wake[0], b[:]); n < len(b) {
			return
		}
	}
}

// next asks the driver for the slot's next request and sends it.
func (l *eventLoop) next(slot int) {
	c := &l.conns[slot]
	p, keep, ok := l.d.Next(slot)
	if !ok {
		c.state = lcRetired
		l.active--
		if c.fd >= 0 {
			syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, c.fd, nil)
		}
		return
	}
	c.max = p.c.opts.MaxResponseBytes
	if keep > 0 && keep < c.max {
		c.max = keep
	}
	c.keep, c.retried = keep, false
	c.request, c.wire = p.wire, p.wire
	c.start = l.now // when the loop last woke: a timeout is not that precise anyway
	c.deadline = c.start.Add(l.h.timeout)
	if dl, ok := l.ctx.Deadline(); ok && dl.Before(c.deadline) {
		c.deadline = dl
	}
	c.ans.reset(keep > 0, c.max, l.h.maxHeader)
	l.send(slot)
}

// send writes the slot's request on its connection, or connects first.
func (l *eventLoop) send(slot int) {
	c := &l.conns[slot]
	if c.fd < 0 {
		if l.dialing >= maxDials {
			c.state = lcQueued
			l.queued = append(l.queued, slot)
			return
		}
		l.dial(slot)
		return
	}
	l.write(slot)
}

// dial starts a connection for the slot.
func (l *eventLoop) dial(slot int) {
	c := &l.conns[slot]
	fd, err := syscall.Socket(l.family, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		l.finish(slot, InferAnswer{}, nil, false, false, l.dialError(os.NewSyscallError("socket", err)))
		return
	}
	syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1) // as Go's dialer does
	c.fd, c.reused = fd, false
	err = syscall.Connect(fd, l.sa)
	switch err {
	case nil:
		if err := l.ctl(syscall.EPOLL_CTL_ADD, slot, syscall.EPOLLIN); err != nil {
			l.finish(slot, InferAnswer{}, nil, false, false, os.NewSyscallError("epoll_ctl", err))
			return
		}
		l.write(slot)
	case syscall.EINPROGRESS:
		if err := l.ctl(syscall.EPOLL_CTL_ADD, slot, syscall.EPOLLOUT); err != nil {
			l.finish(slot, InferAnswer{}, nil, false, false, os.NewSyscallError("epoll_ctl", err))
			return
		}
		c.state = lcDialing
		l.dialing++
	default:
		l.finish(slot, InferAnswer{}, nil, false, false, l.dialError(os.NewSyscallError("connect", err)))
	}
}

func (l *eventLoop) dialError(err error) error {
	return &net.OpError{Op: "dial", Net: "tcp", Addr: netAddr(l.h.addr), Err: err}
}

// netAddr names the dialled address in errors, as net.Dial's do.
type netAddr string

func (a netAddr) Network() string { return "tcp" }
func (a netAddr) String() string  { return string(a) }

// connected ends a connect in progress.
func (l *eventLoop) connected(slot int) {
	c := &l.conns[slot]
	c.state = lcNone
	l.dialDone()
	if e, err := syscall.GetsockoptInt(c.fd, syscall.SOL_SOCKET, syscall.SO_ERROR); err != nil || e != 0 {
		if err == nil {
			err = syscall.Errno(e)
		}
		l.finish(slot, InferAnswer{}, nil, false, false, l.dialError(os.NewSyscallError("connect", err)))
		return
	}
	if err := l.ctl(syscall.EPOLL_CTL_MOD, slot, syscall.EPOLLIN); err != nil {
		l.finish(slot, InferAnswer{}, nil, false, false, os.NewSyscallError("epoll_ctl", err))
		return
	}
	l.write(slot)
}

// write writes what is left of the slot's request.
func (l *eventLoop) write(slot int) {
	c := &l.conns[slot]
	for len(c.wire) > 0 {
		n, err := rawWrite(c.fd, c.wire)
		if n > 0 {
			c.wire = c.wire[n:]
			continue
		}
		switch err {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			if c.state != lcWriting {
				c.state = lcWriting
				l.ctl(syscall.EPOLL_CTL_MOD, slot, syscall.EPOLLOUT)
			}
			return
		}
		if err == nil {
			err = io.ErrShortWrite
		}
		l.finish(slot, InferAnswer{}, nil, false, false, &net.OpError{Op: "write", Net: "tcp", Addr: netAddr(l.h.addr), Err: os.NewSyscallError("write", err)})
		return
	}
	if c.state == lcWriting {
		l.ctl(syscall.EPOLL_CTL_MOD, slot, syscall.EPOLLIN)
	}
	c.state = lcReading
}

// event handles epoll's events for a slot.
func (l *eventLoop) event(slot int, events uint32) {
	c := &l.conns[slot]
	switch c.state {
	case lcDialing:
		l.connected(slot)
	case lcWriting:
		l.write(slot)
	case lcReading:
		l.read(slot)
	}
}

// read reads what came of the slot's answer.
func (l *eventLoop) read(slot int) {
	c := &l.conns[slot]
	n, err := rawRead(c.fd, l.buf)
	var res feedResult
	switch {
	case n > 0:
		res, err = c.ans.feed(l.parser, l.buf[:n])
	case err == syscall.EAGAIN || err == syscall.EINTR:
		return
	case err == nil:
		res, err = c.ans.eof(nil)
	default:
		res, err = c.ans.eof(&net.OpError{Op: "read", Net: "tcp", Addr: netAddr(l.h.addr), Err: os.NewSyscallError("read", err)})
	}
	switch res {
	case feedMore:
		return
	case feedFallback:
		l.handOff(slot)
		return
	}
	if err != nil {
		l.finish(slot, InferAnswer{}, nil, c.ans.started, false, err)
		return
	}
	a, reusable, err := c.ans.result()
	l.finish(slot, a, nil, true, reusable, err)
}

// finish ends the slot's request: a stale keep-alive connection is
// replaced and the request sent once more, as the blocking path does;
// otherwise the driver gets the outcome and the slot's next request goes.
// errBody is a non-2xx answer's body read by the blocking path.
func (l *eventLoop) finish(slot int, a InferAnswer, errBody []byte, started, reusable bool, err error) {
	c := &l.conns[slot]
	if c.state == lcDialing {
		l.dialDone()
	}
	if errBody != nil || (err == nil && a.Status > 299) {
		err = statusError("Infer", &RawResponse{Status: a.Status, Body: errBody})
		a = InferAnswer{}
	}
	httpStatus := false
	if err != nil { // errors.As's target escapes: only a failure pays for it
		var status *Error
		httpStatus = errors.As(err, &status) && status.HTTPStatus != 0
	}
	if c.fd >= 0 && (!reusable || (err != nil && !httpStatus)) {
		syscall.Close(c.fd) // closing removes it from epoll
		c.fd = -1
	}
	if err != nil && !httpStatus {
		if !c.retried && c.reused && !started && staleConn(err) && l.ctx.Err() == nil {
			c.retried, c.wire, c.state = true, c.request, lcNone
			c.ans.reset(c.keep > 0, c.max, l.h.maxHeader)
			l.send(slot)
			return
		}
		err = l.h.fail(l.ctx, "Infer", c.start, c.deadline, err)
	}
	if c.fd >= 0 {
		c.reused = true
	}
	c.state = lcNone
	l.d.Done(slot, a, err)
	l.ready = append(l.ready, slot) // not l.next: a server that fails every request at once would recurse
}

// dialDone counts a connect as ended and starts queued ones.
func (l *eventLoop) dialDone() {
	l.dialing--
	for l.dialing < maxDials && len(l.queued) > 0 {
		q := l.queued[0]
		l.queued = l.queued[1:]
		l.dial(q)
	}
}

// handOff gives the slot's answer to the blocking path: a goroutine reads it
// again from its first byte, on a duplicate of the connection that Go's
// poller watches (deadline and ctx included), and hands it back.
func (l *eventLoop) handOff(slot int) {
	c := &l.conns[slot]
	syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, c.fd, nil)
	f := os.NewFile(uintptr(c.fd), "loop")
	nc, err := net.FileConn(f) // a duplicate: c.fd stays the loop's
	f.Close()
	c.fd = -1
	if err != nil {
		l.finish(slot, InferAnswer{}, nil, true, false, err)
		return
	}
	c.state = lcHanded
	l.handed++
	replay := bytes.Clone(c.ans.replay())
	keep, max, deadline, ctx := c.keep > 0, c.max, c.deadline, l.ctx
	go func() {
		b := handBack{slot: slot, fd: -1}
		cn := &http1Conn{nc: nc, maxHeader: l.h.maxHeader}
		if cn.watch(ctx) && nc.SetDeadline(deadline) == nil {
			src := bytes.NewReader(replay)
			cn.br = bufio.NewReaderSize(io.MultiReader(src, nc), http1BufferSize)
			b.a, b.errBody, _, b.reusable, b.err = cn.answer(keep, max)
			b.started = true
			if b.err == nil && b.reusable && src.Len() > 0 {
				b.err = malformed("%d bytes after the end of the %d-byte body", src.Len()+cn.br.Buffered(), b.a.BodyLen)
			}
		} else {
			b.err = context.Cause(ctx)
		}
		if b.err == nil && b.reusable {
			b.reusable = false
			if tc, ok := nc.(*net.TCPConn); ok {
				if rc, err := tc.SyscallConn(); err == nil {
					rc.Control(func(fd uintptr) {
						if dup, err := dupCloexec(int(fd)); err == nil {
							b.fd, b.reusable = dup, true
						}
					})
				}
			}
		}
		cn.close()
		l.mu.Lock()
		l.back = append(l.back, b)
		l.mu.Unlock()
		l.wakeUp()
	}()
}

// dupCloexec duplicates fd, close-on-exec and non-blocking for the loop.
func dupCloexec(fd int) (int, error) {
	d, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_DUPFD_CLOEXEC, 0)
	if e != 0 {
		return -1, e
	}
	if err := syscall.SetNonblock(int(d), true); err != nil {
		syscall.Close(int(d))
		return -1, err
	}
	return int(d), nil
}

// takeBack finishes the answers the blocking path read.
func (l *eventLoop) takeBack() {
	l.mu.Lock()
	back := l.back
	l.back = nil
	l.mu.Unlock()
	for _, b := range back {
		l.handed--
		c := &l.conns[b.slot]
		c.fd = b.fd
		if c.fd >= 0 {
			if err := l.ctl(syscall.EPOLL_CTL_ADD, b.slot, syscall.EPOLLIN); err != nil {
				syscall.Close(c.fd)
				c.fd, b.reusable = -1, false
			}
		}
		l.finish(b.slot, b.a, b.errBody, b.started, b.reusable, b.err)
	}
}

// expire fails requests past their deadline; their connections close.
func (l *eventLoop) expire(now time.Time) {
	for i := range l.conns {
		c := &l.conns[i]
		switch c.state {
		case lcDialing, lcQueued, lcWriting, lcReading:
			if now.After(c.deadline) {
				if c.state == lcQueued {
					l.unqueue(i)
				}
				c.retried = true // a timeout is not sent again
				l.finish(i, InferAnswer{}, nil, c.ans.started, false, os.ErrDeadlineExceeded)
			}
		}
	}
}

func (l *eventLoop) unqueue(slot int) {
	for k, q := range l.queued {
		if q == slot {
			l.queued = append(l.queued[:k], l.queued[k+1:]...)
			return
		}
	}
}

// endAll ends every request in flight with err and waits for the ones the
// blocking path holds: on a cancelled ctx they abort with it
// (http1Conn.watch); on an epoll error they finish and come back.
func (l *eventLoop) endAll(err error) {
	for i := range l.conns {
		c := &l.conns[i]
		switch c.state {
		case lcDialing, lcQueued, lcWriting, lcReading:
			if c.fd >= 0 {
				syscall.Close(c.fd)
				c.fd = -1
			}
			c.state = lcRetired
			l.d.Done(i, InferAnswer{}, err)
		}
	}
	for l.handed > 0 {
		k, _ := l.wait()
		if k > 0 {
			l.drainWake()
		}
		l.mu.Lock()
		back := l.back
		l.back = nil
		l.mu.Unlock()
		for _, b := range back {
			l.handed--
			if b.fd >= 0 {
				syscall.Close(b.fd)
			}
			l.conns[b.slot].state = lcRetired
			l.d.Done(b.slot, InferAnswer{}, err)
		}
	}
}

func closeFD(fd int) { syscall.Close(fd) }

// rawRead and rawWrite are read and write as raw system calls, which the
// scheduler does not see: the loop's descriptors are non-blocking, so they
// never wait, and the scheduler's bookkeeping around each call is a tenth
// of the loop's time per request.
func rawRead(fd int, b []byte) (int, error) {
	r, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

func rawWrite(fd int, b []byte) (int, error) {
	r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}
