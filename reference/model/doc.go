// Package model is the reference server's native (pure Go) executor: the
// [Model] interface through which models plug in and a [Repository] of
// loaded models and versions. The fixture models it serves ([Fixtures]) and
// their computations live in package fixture, the one fixture oracle, which
// the conformance suite and the load generator use without this package.
package model
