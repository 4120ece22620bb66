package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

// Calls of the system shared memory extension, and the client's side of a
// region: a POSIX shared memory object this process creates, maps and
// removes. An empty region name in SystemSharedMemoryStatus and
// SystemSharedMemoryUnregister means every region.

// SystemSharedMemoryStatus fetches GET /v2/systemsharedmemory[/region/{r}]/status.
func (c *REST) SystemSharedMemoryStatus(ctx context.Context, region string) ([]oip.SystemSharedMemoryRegion, error) {
	const op = "SystemSharedMemoryStatus"
	path := "/v2/systemsharedmemory/status"
	if region != "" {
		path = "/v2/systemsharedmemory/region/" + url.PathEscape(region) + "/status"
	}
	raw, err := c.get(ctx, op, path)
	if err != nil {
		return nil, err
	}
	var out []oip.SystemSharedMemoryRegion
	if err := json.Unmarshal(raw.Body, &out); err != nil || out == nil {
		return nil, &Error{Op: op, HTTPStatus: raw.Status, Message: "system shared memory status is not a JSON array of regions", Body: raw.Body, Err: err}
	}
	return out, nil
}

// SystemSharedMemoryRegister registers byteSize bytes at offset of the POSIX
// shared memory object key as region (POST
// /v2/systemsharedmemory/region/{r}/register).
func (c *REST) SystemSharedMemoryRegister(ctx context.Context, region, key string, offset, byteSize uint64) error {
	_, err := c.post(ctx, "SystemSharedMemoryRegister", "/v2/systemsharedmemory/region/"+url.PathEscape(region)+"/register",
		oip.SystemSharedMemoryRegister{Key: key, Offset: offset, ByteSize: byteSize})
	return err
}

// SystemSharedMemoryUnregister unregisters region, or every region when it
// is empty; the body is empty, as the extension requires.
func (c *REST) SystemSharedMemoryUnregister(ctx context.Context, region string) error {
	const op = "SystemSharedMemoryUnregister"
	path := "/v2/systemsharedmemory/unregister"
	if region != "" {
		path = "/v2/systemsharedmemory/region/" + url.PathEscape(region) + "/unregister"
	}
	u, err := url.Parse(c.base + path)
	if err != nil {
		return &Error{Op: op, Err: err}
	}
	raw, err := c.send(ctx, op, http.MethodPost, u, c.getHeader, c.opts.Host, nil)
	if err != nil {
		return err
	}
	if raw.Status < 200 || raw.Status > 299 {
		return statusError(op, raw)
	}
	return nil
}

// SystemSharedMemoryStatus calls SystemSharedMemoryStatus.
func (c *GRPC) SystemSharedMemoryStatus(ctx context.Context, region string) ([]oip.SystemSharedMemoryRegion, error) {
	ctx, cancel := c.Context(ctx)
	defer cancel()
	r, err := c.stub.SystemSharedMemoryStatus(ctx, &inferencepb.SystemSharedMemoryStatusRequest{Name: region})
	if err != nil {
		return nil, callError(ctx, "SystemSharedMemoryStatus", err)
	}
	return oip.SystemSharedMemoryStatusFromProto(r), nil
}

// SystemSharedMemoryRegister calls SystemSharedMemoryRegister.
func (c *GRPC) SystemSharedMemoryRegister(ctx context.Context, region, key string, offset, byteSize uint64) error {
	ctx, cancel := c.Context(ctx)
	defer cancel()
	_, err := c.stub.SystemSharedMemoryRegister(ctx, &inferencepb.SystemSharedMemoryRegisterRequest{Name: region, Key: key, Offset: offset, ByteSize: byteSize})
	if err != nil {
		return callError(ctx, "SystemSharedMemoryRegister", err)
	}
	return nil
}

// SystemSharedMemoryUnregister calls SystemSharedMemoryUnregister.
func (c *GRPC) SystemSharedMemoryUnregister(ctx context.Context, region string) error {
	ctx, cancel := c.Context(ctx)
	defer cancel()
	_, err := c.stub.SystemSharedMemoryUnregister(ctx, &inferencepb.SystemSharedMemoryUnregisterRequest{Name: region})
	if err != nil {
		return callError(ctx, "SystemSharedMemoryUnregister", err)
	}
	return nil
}

// SharedMemory is a POSIX shared memory object created by this process
// (shm_open's /dev/shm/<key> on Linux), mapped read-write. A server on the
// same host registers it by its Key. Close unmaps and removes it.
type SharedMemory struct {
	Key  string // "/name", as shm_open and Triton's clients spell it
	path string
	data []byte
}

// CreateSharedMemory creates a new shared memory object of size bytes under
// key ("/name" or "name"; it must not exist) and maps it.
func CreateSharedMemory(key string, size int) (*SharedMemory, error) {
	name := strings.TrimPrefix(key, "/")
	if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return nil, fmt.Errorf("create shared memory %q: not a POSIX shared memory name (one path segment)", key)
	}
	if size <= 0 {
		return nil, fmt.Errorf("create shared memory %q: size %d must be positive", key, size)
	}
	path := "/dev/shm/" + name
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create shared memory %q: %w", key, err)
	}
	defer f.Close()
	fail := func(err error) (*SharedMemory, error) {
		os.Remove(path)
		return nil, fmt.Errorf("create shared memory %q: %w", key, err)
	}
	if err := f.Truncate(int64(size)); err != nil {
		return fail(err)
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return fail(err)
	}
	return &SharedMemory{Key: "/" + name, path: path, data: data}, nil
}

// Bytes is the mapped object; it is invalid after Close.
func (m *SharedMemory) Bytes() []byte { return m.data }

// Path is the object's file (/dev/shm/name); "" after Close.
func (m *SharedMemory) Path() string { return m.path }

// Close unmaps the object and removes it; it may be called more than once.
func (m *SharedMemory) Close() error {
	var errs []error
	if m.data != nil {
		errs = append(errs, syscall.Munmap(m.data))
		m.data = nil
	}
	if m.path != "" {
		if err := os.Remove(m.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
		m.path = ""
	}
	return errors.Join(errs...)
}
