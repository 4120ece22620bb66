// Command image builds the oipkit container image without a container
// daemon or a registry: static oipkit binaries (CGO off, -trimpath, no
// build ID or VCS stamp) for each platform, each in one layer on an empty
// base, with a non-root user, gathered in an OCI image index and written as
// an OCI archive (a tar of an OCI image layout) that skopeo, podman and
// docker load.
//
// The build is reproducible: every timestamp is SOURCE_DATE_EPOCH (the
// Makefile passes the last commit's time), tar entries are sorted with
// fixed owners and modes, and the layer is compressed by the Go toolchain's
// gzip, so the same source and toolchain give the same digests. `make
// image` runs it; `make image-check` builds twice and compares.
//
//	go run ./deploy/image -o bin/oipkit-image.oci.tar [-platforms linux/amd64,linux/arm64]
package main
