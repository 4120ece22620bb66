package model

import "github.com/oipkit/oipkit/fixture"

// The executor's interfaces are defined with the fixtures that implement
// them, in package fixture, so that the conformance suite and the load
// generator compute fixture outputs without importing the server. The
// server names them here for its own models.
type (
	// Model is one version of a model; see fixture.Model.
	Model = fixture.Model
	// Decoupled answers 0..N responses per request; see fixture.Decoupled.
	Decoupled = fixture.Decoupled
	// Stateful keeps state per sequence; see fixture.Stateful.
	Stateful = fixture.Stateful
)

// ErrInvalidInput marks inputs or parameters a model cannot use: the
// client's fault (HTTP 400, INVALID_ARGUMENT). It is fixture.ErrInvalidInput.
var ErrInvalidInput = fixture.ErrInvalidInput

// Platform is the platform name reported by every native model.
const Platform = fixture.Platform

// Fixtures returns a repository holding every fixture model (fixture.All).
func Fixtures(cfg fixture.Config) *Repository {
	r := NewRepository()
	for _, m := range fixture.All(cfg) {
		m = viewIdentity(m) // identity_view.go
		if err := r.Add(m); err != nil {
			panic(err) // the fixture set is static; a clash is a programming error
		}
	}
	return r
}
