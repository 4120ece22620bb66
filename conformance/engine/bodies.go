package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/oipkit/oipkit/conformance/report"
)

// Typed reading of the JSON answers the schema describes. A spec does not
// type-check members by hand: the schema of the route grades every 2xx body
// after the spec (checkReceived), under the requirement each place names.
// What a spec checks is values (a count that grew, the model a list names),
// and it reads them with one decode into the protocol's own types (package
// oip), which is only sound on a body the schema accepts: a member missing
// or of the wrong type would read as zero and fail a value check for a
// defect the schema already reports. So a body that breaks its schema where
// a failure is due is not read at all, and the spec records nothing for it.

// ErrBodyBreaksSchema is DecodeBody's answer for a body that breaks the
// schema of its route where the catalog grades a failure: the schema check
// after the spec reports it, once, under the requirement of that place.
var ErrBodyBreaksSchema = errors.New("the body breaks the schema of its route, which grades it after the spec")

// DecodeBody reads a 200 answer's JSON body into v, typically a message of
// package oip. It fails with [ErrBodyBreaksSchema] when the route has a
// schema and the body breaks it where a failure is due, and with an error
// saying what came back when there is no such answer.
func DecodeBody(e *Exchange, v any) error {
	if err := e.noAnswer(); err != nil {
		return unusable("%v", err)
	}
	if e.Status != http.StatusOK {
		return fmt.Errorf("%s: %s, want 200", e.What(), e.Got())
	}
	_, _, schemaed := e.schemaBody()
	if schemaed && breaksSchema(e.schemaProblems()) {
		return ErrBodyBreaksSchema
	}
	if err := json.NewDecoder(bytes.NewReader(e.Body)).Decode(v); err != nil {
		if schemaed && len(e.schemaProblems()) > 0 {
			// A warning's place (an optional member of another type): the
			// schema reports it; there is nothing sound to read.
			return ErrBodyBreaksSchema
		}
		return fmt.Errorf("%s: the body does not read as the protocol's message: %v (%s)", e.What(), err, e.Got())
	}
	return nil
}

// breaksSchema reports whether one of probs fails its requirement (rather
// than warns).
func breaksSchema(probs []SchemaProblem) bool {
	for _, p := range probs {
		if p.Req == "" || classify(p.Req, grading{soft: p.Soft}) == report.ClassFail {
			return true
		}
	}
	return false
}

// ReadBody decodes the 200 JSON body of the exchange c checks as a T: ok
// is false when there is nothing to check. A missing answer or another
// status is a finding of c's requirement; a body that breaks its schema is
// not (the schema grades it after the spec), so one defect is one finding.
//
//	r, ok := ReadBody[oip.StatisticsResponse](Verify(e))
func ReadBody[T any](c *Check) (T, bool) {
	var v T
	e, err := exchangeOf(c.actual)
	if err == nil {
		err = DecodeBody(e, &v)
	}
	if errors.Is(err, ErrBodyBreaksSchema) {
		return v, false
	}
	return v, c.To(PassCheck(func(*Exchange) error { return err }))
}
