// Package kubernetes holds no code: it is the home of the Kubernetes
// manifests beside it (kustomize bases, components and examples for the
// reference server, the conformance Job and the distributed load test) and
// of the test that renders every kustomization as kubectl apply -k would
// and decodes each object strictly into the k8s.io/api types, then checks
// what the API server would not: indexes and parallelism, environment
// references, volumes, resources, security contexts and TLS mounts.
package kubernetes
