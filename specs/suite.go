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
