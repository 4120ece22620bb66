package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// fakeBinaries stand in for oipkit: packing is what is tested here; make
// image-check builds the real binaries twice.
func fakeBinaries() []Binary {
	return []Binary{
		{Platform: v1.Platform{OS: "linux", Architecture: "amd64"}, Data: []byte("\x7fELF amd64 oipkit")},
		{Platform: v1.Platform{OS: "linux", Architecture: "arm64"}, Data: []byte("\x7fELF arm64 oipkit")},
	}
}

var testMetadata = Metadata{Name: "oipkit", Version: "1.2.3", Revision: "abc123", Created: time.Unix(1700000000, 0).UTC()}

func build(t *testing.T, md Metadata) (v1.ImageIndex, string) {
	t.Helper()
	idx, err := newIndex(fakeBinaries(), md)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "image.oci.tar")
	if err := writeArchive(out, idx, md); err != nil {
		t.Fatal(err)
	}
	return idx, out
}

func TestReproducible(t *testing.T) {
	idx1, out1 := build(t, testMetadata)
	idx2, out2 := build(t, testMetadata)
	d1, _ := idx1.Digest()
	d2, _ := idx2.Digest()
	if d1 != d2 {
		t.Errorf("index digests differ: %s, %s", d1, d2)
	}
	a1, _, err := sha256File(out1)
	if err != nil {
		t.Fatal(err)
	}
	if a2, _, _ := sha256File(out2); a1 != a2 {
		t.Errorf("archives differ: %s, %s", a1, a2)
	}
	// Any input changes the digest.
	md := testMetadata
	md.Created = md.Created.Add(time.Second)
	idx3, _ := build(t, md)
	if d3, _ := idx3.Digest(); d3 == d1 {
		t.Error("another creation time gave the same digest")
	}
}

func TestImageContents(t *testing.T) {
	// TestArchiveLayout validates the index as written; ggcr's validation
	// of the in-memory one trips on an empty annotation map.
	idx, _ := build(t, testMetadata)
	if mt, _ := idx.MediaType(); mt != types.OCIImageIndex {
		t.Errorf("index media type %s", mt)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 2 {
		t.Fatalf("%d manifests, want 2", len(im.Manifests))
	}
	for i, m := range im.Manifests {
		want := fakeBinaries()[i]
		if m.Platform == nil || m.Platform.Architecture != want.Platform.Architecture || m.Platform.OS != "linux" {
			t.Errorf("manifest %d platform %+v", i, m.Platform)
		}
		img, err := idx.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
			t.Errorf("manifest media type %s", mt)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		c := cf.Config
		if c.User != "65532:65532" || len(c.Entrypoint) != 1 || c.Entrypoint[0] != binPath || c.WorkingDir != home {
			t.Errorf("config: user %q entrypoint %q workdir %q", c.User, c.Entrypoint, c.WorkingDir)
		}
		if cf.Architecture != want.Platform.Architecture || !cf.Created.Time.Equal(testMetadata.Created) {
			t.Errorf("config file: arch %s created %v", cf.Architecture, cf.Created)
		}
		if c.Labels["org.opencontainers.image.version"] != "1.2.3" || c.Labels["org.opencontainers.image.revision"] != "abc123" {
			t.Errorf("labels %v", c.Labels)
		}
		layers, err := img.Layers()
		if err != nil || len(layers) != 1 {
			t.Fatalf("layers %v, %v", layers, err)
		}
		if mt, _ := layers[0].MediaType(); mt != types.OCILayer {
			t.Errorf("layer media type %s", mt)
		}
		checkRootfs(t, layers[0], want.Data)
	}
}

// checkRootfs reads the layer back: the binary, executable and root-owned;
// the user's home owned by it; nothing dated other than the fixed time.
func checkRootfs(t *testing.T, l v1.Layer, bin []byte) {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	seen := map[string]*tar.Header{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		seen[h.Name] = h
		if !h.ModTime.Equal(testMetadata.Created) {
			t.Errorf("%s dated %v", h.Name, h.ModTime)
		}
		if h.Name == "usr/local/bin/oipkit" {
			data, _ := io.ReadAll(tr)
			if !bytes.Equal(data, bin) || h.Mode != 0o755 || h.Uid != 0 {
				t.Errorf("binary: %d bytes, mode %o, uid %d", len(data), h.Mode, h.Uid)
			}
		}
	}
	for _, name := range []string{"usr/local/bin/oipkit", "etc/passwd", "etc/group", "tmp/", "home/nonroot/"} {
		if seen[name] == nil {
			t.Errorf("layer lacks %s", name)
		}
	}
	if h := seen["home/nonroot/"]; h != nil && h.Uid != uid {
		t.Errorf("home owned by %d", h.Uid)
	}
	if h := seen["tmp/"]; h != nil && h.Mode != 0o1777 {
		t.Errorf("/tmp mode %o", h.Mode)
	}
}

// TestArchiveLayout reads the archive as an OCI image layout: index.json
// names the image index by its tag, and every blob is there.
func TestArchiveLayout(t *testing.T) {
	idx, out := build(t, testMetadata)
	dir := t.TempDir()
	untar(t, out, dir)
	if b, err := os.ReadFile(filepath.Join(dir, "oci-layout")); err != nil || !bytes.Contains(b, []byte(`"imageLayoutVersion"`)) {
		t.Fatalf("oci-layout: %q, %v", b, err)
	}
	lp, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	top, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	tm, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := idx.Digest()
	if len(tm.Manifests) != 1 || tm.Manifests[0].Digest != want || tm.Manifests[0].MediaType != types.OCIImageIndex {
		t.Fatalf("index.json: %+v, want the image index %s", tm.Manifests, want)
	}
	if ref := tm.Manifests[0].Annotations["org.opencontainers.image.ref.name"]; ref != "1.2.3" {
		t.Errorf("ref.name %q", ref)
	}
	inner, err := top.ImageIndex(want)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Index(inner); err != nil {
		t.Errorf("archived index does not validate: %v", err)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "index.json"))
	var anyJSON map[string]any
	if err := json.Unmarshal(raw, &anyJSON); err != nil {
		t.Errorf("index.json: %v", err)
	}
}

func untar(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(testMetadata.Created) || h.Uid != 0 {
			t.Errorf("archive entry %s: time %v uid %d", h.Name, h.ModTime, h.Uid)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestParsePlatform(t *testing.T) {
	for s, ok := range map[string]bool{"linux/amd64": true, "linux/arm64/v8": true, "windows/amd64": false, "linux": false, "linux/": false} {
		if _, err := parsePlatform(s); (err == nil) != ok {
			t.Errorf("parsePlatform(%q) = %v", s, err)
		}
	}
}
