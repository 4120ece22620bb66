package specs

import _ "embed"

// The conformance suite's own data files live beside the catalog so that
// they are reviewed with it; package conformance parses them.

// ProfilesYAML is the embedded profiles.yaml: the conformance profiles.
//
//go:embed profiles.yaml
var ProfilesYAML []byte

// WaiversYAML is the embedded waivers.yaml: requirements deliberately left
// without a spec, with reasons.
//
//go:embed waivers.yaml
var WaiversYAML []byte

// RESTSchemaJSON is the embedded oip-rest.schema.json: the JSON Schema of
// the REST JSON bodies (server and model metadata, inference responses, and
// every extension's answers and requests), written from OIP-YAML's
// components and the catalog's statements. Each place names, in
// x-oip-requirement, the catalog requirement a violation there is graded
// under.
//
//go:embed oip-rest.schema.json
var RESTSchemaJSON []byte
