package specs

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Extension is the name of a protocol extension as servers list it in the
// "extensions" member of server metadata (the de-facto Triton set, catalog
// OIP-REST-SMETA-004). It is oipkit's one vocabulary of optional features:
// the suite's feature labels, the reference server's advertisement, the
// catalog's and the fixtures' "extension" fields all use these names.
type Extension string

// The extensions, alphabetical. Generate is not advertised by Triton (its
// generate endpoint is provisional) but is still a feature the suite can
// observe by probing.
const (
	ExtBinaryTensorData   Extension = "binary_tensor_data"
	ExtClassification     Extension = "classification"
	ExtCUDASharedMemory   Extension = "cuda_shared_memory"
	ExtGenerate           Extension = "generate"
	ExtLogging            Extension = "logging"
	ExtModelConfiguration Extension = "model_configuration"
	ExtModelRepository    Extension = "model_repository"
	ExtParameters         Extension = "parameters"
	ExtSchedulePolicy     Extension = "schedule_policy"
	ExtSequence           Extension = "sequence"
	ExtStatistics         Extension = "statistics"
	ExtSystemSharedMemory Extension = "system_shared_memory"
	ExtTrace              Extension = "trace"
)

// Extensions is the closed vocabulary, alphabetical: the extensions of
// extensionGroups, so that a new one is named in one place.
var Extensions = slices.Sorted(maps.Keys(extensionGroups))

// extensionGroups maps each extension to its requirement group in the
// catalog (CUDA shared memory shares the shared-memory group).
var extensionGroups = map[Extension]string{
	ExtBinaryTensorData:   "OIP-EXT-BIN",
	ExtClassification:     "OIP-EXT-CLS",
	ExtCUDASharedMemory:   "OIP-EXT-SHM",
	ExtGenerate:           "OIP-EXT-GEN",
	ExtLogging:            "OIP-EXT-LOG",
	ExtModelConfiguration: "OIP-EXT-CFG",
	ExtModelRepository:    "OIP-EXT-REPO",
	ExtParameters:         "OIP-EXT-PARAM",
	ExtSchedulePolicy:     "OIP-EXT-SCHED",
	ExtSequence:           "OIP-EXT-SEQ",
	ExtStatistics:         "OIP-EXT-STAT",
	ExtSystemSharedMemory: "OIP-EXT-SHM",
	ExtTrace:              "OIP-EXT-TRACE",
}

// Group is the catalog requirement group of the extension ("OIP-EXT-STAT").
func (e Extension) Group() string { return extensionGroups[e] }

// Known reports whether e is in the vocabulary.
func (e Extension) Known() bool { return slices.Contains(Extensions, e) }

// ParseExtension returns the extension named s (surrounding space ignored).
func ParseExtension(s string) (Extension, error) {
	e := Extension(strings.TrimSpace(s))
	if !e.Known() {
		names := make([]string, len(Extensions))
		for i, x := range Extensions {
			names[i] = string(x)
		}
		return "", fmt.Errorf("unknown extension %q (known: %s)", s, strings.Join(names, ", "))
	}
	return e, nil
}

// ParseAdvertised splits an advertised name into its extension and an
// optional capability in parentheses, as Triton writes them:
// "model_repository(unload_dependents)" is model_repository with
// "unload_dependents", "sequence(string_id)" is sequence with "string_id".
// ok is false for a name outside the vocabulary (KServe's
// "model_repository_extension", for example), which a caller reports rather
// than guesses at.
func ParseAdvertised(s string) (ext Extension, capability string, ok bool) {
	name, rest, hasCap := strings.Cut(strings.TrimSpace(s), "(")
	if hasCap {
		c, closed := strings.CutSuffix(rest, ")")
		if !closed || c == "" || strings.ContainsAny(c, "()") {
			return "", "", false
		}
		capability = c
	}
	ext = Extension(name)
	if !ext.Known() {
		return "", "", false
	}
	return ext, capability, true
}

// Capabilities that servers advertise in parentheses after an extension.
const (
	// CapabilityStringID: sequence ids may be strings ("sequence(string_id)").
	CapabilityStringID = "string_id"
)

// WithCapability is the advertised name of e with capability c:
// ExtSequence.WithCapability(CapabilityStringID) is "sequence(string_id)".
func (e Extension) WithCapability(c string) string { return string(e) + "(" + c + ")" }

// Transport is a protocol binding of OIP: TransportREST or TransportGRPC
// (catalog entries may also say TransportBoth or TransportNone).
type Transport string

// Transports lists the transports a server can be reached over.
var Transports = []Transport{TransportREST, TransportGRPC}
