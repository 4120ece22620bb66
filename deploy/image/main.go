package main

import (
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/oipkit/oipkit/version"
)

const pkg = "github.com/oipkit/oipkit/cmd/oipkit"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	out := fs.String("o", "../bin/oipkit-image.oci.tar", "OCI archive to write")
	platforms := fs.String("platforms", "linux/amd64,linux/arm64", "comma-separated platforms")
	name := fs.String("name", "oipkit", "image repository name recorded in the archive")
	ver := fs.String("version", version.Version, "version: the tag, the label and oipkit's reported version")
	revision := fs.String("revision", "", "source revision for the org.opencontainers.image.revision label")
	epoch := fs.String("source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "Unix time of every timestamp in the image (default $SOURCE_DATE_EPOCH, else 0)")
	digestFile := fs.String("digest-file", "", "also write the image index digest to this file")
	// The deploy module is a module of its own (so that importers of oipkit
	// do not inherit go-containerregistry and Kubernetes); oipkit is built
	// in its own module, whose go.mod alone decides its dependencies.
	src := fs.String("src", "..", "directory of the oipkit module to build")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	md := Metadata{Name: *name, Version: *ver, Revision: *revision, Created: time.Unix(0, 0).UTC()}
	if *epoch != "" {
		sec, err := strconv.ParseInt(*epoch, 10, 64)
		if err != nil || sec < 0 {
			return fmt.Errorf("source date epoch %q: want Unix seconds", *epoch)
		}
		md.Created = time.Unix(sec, 0).UTC()
	}

	tmp, err := os.MkdirTemp("", "oipkit-build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var bins []Binary
	for _, s := range strings.Split(*platforms, ",") {
		p, err := parsePlatform(strings.TrimSpace(s))
		if err != nil {
			return err
		}
		path := filepath.Join(tmp, "oipkit-"+p.Architecture+p.Variant)
		if err := goBuild(*src, path, p.Architecture, p.Variant, md.Version); err != nil {
			return fmt.Errorf("build for %s: %w", platformString(p), err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		bins = append(bins, Binary{Platform: p, Data: data})
	}
	if len(bins) == 0 {
		return errors.New("no platform")
	}

	idx, err := newIndex(bins, md)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		return err
	}
	if err := writeArchive(*out, idx, md); err != nil {
		return fmt.Errorf("write %s: %w", *out, err)
	}
	return summarize(os.Stdout, idx, *out, *digestFile)
}

// goBuild builds a static oipkit for linux/arch. Everything that would put
// the build's place or time into the binary is off, and the architecture
// levels are pinned so the builder's environment does not leak in.
func goBuild(src, out, arch, variant, ver string) error {
	ldflags := "-s -w -buildid= -X github.com/oipkit/oipkit/version.Version=" + ver
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", out, pkg)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch, "GOFLAGS=", "GOEXPERIMENT=",
		"GOAMD64=v1", "GOARM64=v8.0")
	if arch == "arm" && variant != "" {
		cmd.Env = append(cmd.Env, "GOARM="+strings.TrimPrefix(variant, "v"))
	}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

// summarize prints the digests and sizes, and writes the digest file.
func summarize(w io.Writer, idx v1.ImageIndex, archive, digestFile string) error {
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "image index %s\n", d)
	for _, m := range im.Manifests {
		img, err := idx.Image(m.Digest)
		if err != nil {
			return err
		}
		layers, err := img.Layers()
		if err != nil {
			return err
		}
		var compressed int64
		for _, l := range layers {
			n, err := l.Size()
			if err != nil {
				return err
			}
			compressed += n
		}
		fmt.Fprintf(w, "  %-12s %s  layer %.1f MB compressed\n", platformString(*m.Platform), m.Digest, float64(compressed)/1e6)
	}
	sum, size, err := sha256File(archive)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "archive %s %s (%.1f MB)\n", archive, sum, float64(size)/1e6)
	if digestFile != "" {
		return os.WriteFile(digestFile, []byte(d.String()+"\n"), 0o644)
	}
	return nil
}

// sha256File is the hex SHA-256 of a file.
func sha256File(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	return fmt.Sprintf("sha256:%x", h.Sum(nil)), n, err
}
