package reference

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"google.golang.org/grpc/codes"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference/model"
)

// invalidError is a request that breaks the protocol or the model's
// signature. It matches oip.ErrInvalid so every invalid request, whether
// found by a decoder or by validation, is classified the same way.
type invalidError struct{ msg string }

func (e *invalidError) Error() string        { return e.msg }
func (e *invalidError) Is(target error) bool { return target == oip.ErrInvalid }

func invalidf(format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...)}
}

// panicError is a panic recovered inside a model or the request pipeline.
type panicError struct {
	where string
	value any
}

func (e *panicError) Error() string {
	return fmt.Sprintf("internal error: %s panicked: %v", e.where, e.value)
}

// statusClientClosed is the status recorded when the client went away before
// the answer (nginx's convention); the client never sees it.
const statusClientClosed = 499

// httpStatus maps an error to the REST status code. Client mistakes are 4xx;
// only server faults are 5xx. 413 is kept for bodies over MaxBodyBytes: a
// tensor over MaxTensorElements (oip.ErrTooLarge) is usually a shape that
// does not match a small body, so it is a plain 400, the status the protocol
// names for bad requests.
func httpStatus(err error) int {
	var maxBytes *http.MaxBytesError
	switch {
	case errors.As(err, &maxBytes):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, oip.ErrInvalid), errors.Is(err, oip.ErrTooLarge), errors.Is(err, model.ErrInvalidInput):
		return http.StatusBadRequest
	case errors.Is(err, errTooManySequences):
		return http.StatusTooManyRequests
	case errors.Is(err, model.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, errNotReady):
		return http.StatusBadRequest
	case errors.Is(err, context.Canceled):
		return statusClientClosed
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// grpcCode maps an error to the gRPC status code, as httpStatus does.
func grpcCode(err error) codes.Code {
	switch {
	case errors.Is(err, oip.ErrTooLarge), errors.Is(err, errTooManySequences):
		return codes.ResourceExhausted
	case errors.Is(err, oip.ErrInvalid), errors.Is(err, model.ErrInvalidInput):
		return codes.InvalidArgument
	case errors.Is(err, model.ErrNotFound):
		return codes.NotFound
	case errors.Is(err, errNotReady):
		return codes.Unavailable
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	}
	return codes.Internal
}

// grpcCodeNames are the canonical gRPC code names used as metric labels.
var grpcCodeNames = [...]string{
	codes.OK:                 "OK",
	codes.Canceled:           "CANCELLED",
	codes.Unknown:            "UNKNOWN",
	codes.InvalidArgument:    "INVALID_ARGUMENT",
	codes.DeadlineExceeded:   "DEADLINE_EXCEEDED",
	codes.NotFound:           "NOT_FOUND",
	codes.AlreadyExists:      "ALREADY_EXISTS",
	codes.PermissionDenied:   "PERMISSION_DENIED",
	codes.ResourceExhausted:  "RESOURCE_EXHAUSTED",
	codes.FailedPrecondition: "FAILED_PRECONDITION",
	codes.Aborted:            "ABORTED",
	codes.OutOfRange:         "OUT_OF_RANGE",
	codes.Unimplemented:      "UNIMPLEMENTED",
	codes.Internal:           "INTERNAL",
	codes.Unavailable:        "UNAVAILABLE",
	codes.DataLoss:           "DATA_LOSS",
	codes.Unauthenticated:    "UNAUTHENTICATED",
}

func grpcCodeName(c codes.Code) string {
	if int(c) < len(grpcCodeNames) {
		return grpcCodeNames[c]
	}
	return c.String()
}
