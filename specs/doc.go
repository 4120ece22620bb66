// Package specs is oipkit's machine-readable copy of the Open Inference
// Protocol (OIP / KServe v2) and the Triton protocol extensions.
//
// It embeds three YAML files and exposes them as typed data:
//
//   - requirements.yaml: every numbered requirement of the OIP requirements
//     catalog, with its normalized strength (Level), transport, gating
//     extension, whom the rule binds (server, client or both), the finding
//     class of a failed check (fail, lenient, warning; a Regrade reason
//     where it is not what the level gives), a one-line statement, its
//     source and a short test recipe. Conformance specs are labelled
//     LabelPrefix+ID, so reports can map each result back to a requirement
//     and grade it.
//   - fixtures.yaml: the fixture-model contract every server under test must
//     deploy, so the suite can compute expected outputs itself.
//   - datatypes.yaml: the tensor datatype table (sizes, JSON form, gRPC
//     contents field, raw encoding).
//
// Beside them, oip-rest.schema.json (RESTSchemaJSON) is the JSON Schema of
// the REST JSON bodies, the core's from OIP-YAML's components and the
// extensions' from the catalog's statements, with the requirement each
// place is graded under.
//
// Keeping the data in one embedded place means the conformance suite, the
// reference server, the load generator and the reports all work from the same
// definitions; the loaders validate the data so a bad edit fails the tests of
// this package rather than surfacing as a confusing report later.
package specs
