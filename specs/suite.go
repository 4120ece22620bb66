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
// the REST success bodies servers send (server metadata, model metadata,
// inference responses), written from OIP-YAML's components. Each place
// names, in x-oip-requirement, the catalog requirement a violation there is
// graded under.
//
//go:embed oip-rest.schema.json
var RESTSchemaJSON []byte
