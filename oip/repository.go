package oip

// RepositoryModel is one entry of the model repository index (Triton's
// model_repository extension): POST /v2/repository/index answers a JSON
// array of them, gRPC RepositoryIndex the same fields. State is READY for a
// model ready for inference (Triton also uses UNAVAILABLE, LOADING and
// UNLOADING); Reason says why a model is not ready.
type RepositoryModel struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	State   string `json:"state,omitempty"`
	Reason  string `json:"reason,omitempty"`
}
