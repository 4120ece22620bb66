// Package model is the reference server's native (pure Go) executor: the
// [Model] interface through which models plug in, a [Repository] of loaded
// models and versions, and the fixture models of the oipkit fixture contract
// (add_sub, identity_<t>, versioned, delay).
package model
