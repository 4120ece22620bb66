package oiptarget

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/tensor"
)

// Shared memory modes (perf_analyzer's shared-memory option).
const (
	SharedMemoryNone   = "none"
	SharedMemorySystem = "system"
	SharedMemoryCUDA   = "cuda"
)

// DefaultOutputSharedMemorySize is the bytes given to each output in shared
// memory, as perf_analyzer's output-shared-memory-size option (100 KiB).
const DefaultOutputSharedMemorySize = 100 << 10

// shmRegistrar registers regions: *client.REST and *client.GRPC.
type shmRegistrar interface {
	SystemSharedMemoryRegister(ctx context.Context, region, key string, offset, byteSize uint64) error
	SystemSharedMemoryUnregister(ctx context.Context, region string) error
}

// sharedMemory holds the regions of a Inputs.SharedMemory system run: one
// object and region for the inputs of each distinct request (written once,
// before the run) and one for its outputs (every output gets
// OutputSharedMemorySize bytes; concurrent requests overwrite them, as in
// perf_analyzer). Close unregisters and removes them all.
type sharedMemory struct {
	reg     shmRegistrar
	prefix  string
	objects []*client.SharedMemory
	regions []string
}

func newSharedMemory(c client.Client) (*sharedMemory, error) {
	reg, ok := c.(shmRegistrar)
	if !ok {
		return nil, configErr("Inputs.SharedMemory system: the %T client cannot register shared memory", c)
	}
	return &sharedMemory{reg: reg, prefix: fmt.Sprintf("oipkit_load_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9)}, nil
}

// region creates a shared memory object of size bytes and registers it.
func (m *sharedMemory) region(ctx context.Context, name string, size int) (*client.SharedMemory, string, error) {
	name = m.prefix + "_" + name
	obj, err := client.CreateSharedMemory("/"+name, size)
	if err != nil {
		return nil, "", err
	}
	m.objects = append(m.objects, obj)
	if err := m.reg.SystemSharedMemoryRegister(ctx, name, obj.Key, 0, uint64(size)); err != nil {
		return nil, "", fmt.Errorf("register system shared memory region %q (is the server on this host, with the system_shared_memory extension?): %w", name, err)
	}
	m.regions = append(m.regions, name)
	return obj, name, nil
}

// place puts the inputs of request i in a region and asks for every output
// of outputs into another.
func (m *sharedMemory) place(ctx context.Context, i int, req *oip.InferRequest, outputs []oip.TensorMetadata, outSize int) error {
	total := 0
	for _, in := range req.Inputs {
		total += tensor.RawSize(in.Tensor)
	}
	if total > 0 {
		obj, name, err := m.region(ctx, fmt.Sprintf("%d_in", i), total)
		if err != nil {
			return err
		}
		off := 0
		for j := range req.Inputs {
			in := &req.Inputs[j]
			raw, err := tensor.EncodeRaw(in.Tensor)
			if err != nil {
				return fmt.Errorf("input %q: %w", in.Name, err)
			}
			copy(obj.Bytes()[off:], raw)
			in.Parameters = oip.SharedMemoryRef{Region: name, Offset: int64(off), ByteSize: int64(len(raw))}.Params()
			in.Data = nil
			off += len(raw)
		}
	}
	if len(outputs) == 0 {
		return nil
	}
	_, name, err := m.region(ctx, fmt.Sprintf("%d_out", i), outSize*len(outputs))
	if err != nil {
		return err
	}
	req.Outputs = nil
	for j, o := range outputs {
		req.Outputs = append(req.Outputs, oip.RequestedOutput{Name: o.Name,
			Parameters: oip.SharedMemoryRef{Region: name, Offset: int64(j * outSize), ByteSize: int64(outSize)}.Params()})
	}
	return nil
}

// Close unregisters every region (with its own deadline: the run's context
// may be over, on Ctrl-C) and removes the objects.
func (m *sharedMemory) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var errs []error
	for _, r := range m.regions {
		if err := m.reg.SystemSharedMemoryUnregister(ctx, r); err != nil {
			errs = append(errs, fmt.Errorf("unregister shared memory region %q: %w", r, err))
		}
	}
	m.regions = nil
	for _, o := range m.objects {
		errs = append(errs, o.Close())
	}
	m.objects = nil
	return errors.Join(errs...)
}
