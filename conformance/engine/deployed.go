package engine

// FixtureDeployed reports whether a fixture model is deployed (found or
// declared), without skipping the spec: for a spec whose reading of an
// answer depends on it (server readiness with never_ready deployed).
func FixtureDeployed(name string) bool { return current.Deployed(name) }
