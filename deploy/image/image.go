package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's user: distroless's "nonroot", so that a pod's runAsNonRoot
// holds without a runAsUser and files it writes are not root's.
const (
	uid     = 65532
	user    = "nonroot"
	home    = "/home/nonroot"
	binPath = "/usr/local/bin/oipkit"
)

// Metadata describes the image beyond its binaries.
type Metadata struct {
	Name     string    // repository name, e.g. "oipkit" or "ghcr.io/acme/oipkit"
	Version  string    // tag and org.opencontainers.image.version
	Revision string    // source revision (git commit), may be empty
	Created  time.Time // every timestamp in the image
}

// Binary is the oipkit executable for one platform.
type Binary struct {
	Platform v1.Platform
	Data     []byte
}

// rootfs is the layer's content: the binary, passwd and group files naming
// the user, and its home (the working directory) and /tmp, writable.
func rootfs(bin []byte, created time.Time) ([]byte, error) {
	type entry struct {
		name  string
		mode  int64
		owner int
		dir   bool
		data  []byte
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:%s:%s:/sbin/nologin\n", user, uid, uid, user, home)
	group := fmt.Sprintf("root:x:0:\n%s:x:%d:\n", user, uid)
	entries := []entry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "home/", mode: 0o755, dir: true},
		{name: strings.TrimPrefix(home, "/") + "/", mode: 0o755, owner: uid, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
		{name: "usr/", mode: 0o755, dir: true},
		{name: "usr/local/", mode: 0o755, dir: true},
		{name: "usr/local/bin/", mode: 0o755, dir: true},
		{name: strings.TrimPrefix(binPath, "/"), mode: 0o755, data: bin},
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{
			Name: e.name, Mode: e.mode, Uid: e.owner, Gid: e.owner,
			ModTime: created, Format: tar.FormatPAX,
			Typeflag: tar.TypeReg, Size: int64(len(e.data)),
		}
		if e.dir {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// newImage is one platform's image: an OCI manifest with one layer.
func newImage(b Binary, md Metadata) (v1.Image, error) {
	fsTar, err := rootfs(b.Data, md.Created)
	if err != nil {
		return nil, fmt.Errorf("layer for %s: %w", platformString(b.Platform), err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(fsTar)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		return nil, fmt.Errorf("layer for %s: %w", platformString(b.Platform), err)
	}
	created := v1.Time{Time: md.Created}
	labels := map[string]string{
		"org.opencontainers.image.title":       "oipkit",
		"org.opencontainers.image.description": "Open Inference Protocol conformance suite, load generator and reference server",
		"org.opencontainers.image.version":     md.Version,
		"org.opencontainers.image.created":     md.Created.UTC().Format(time.RFC3339),
	}
	if md.Revision != "" {
		labels["org.opencontainers.image.revision"] = md.Revision
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: b.Platform.Architecture,
		OS:           b.Platform.OS,
		Variant:      b.Platform.Variant,
		Created:      created,
		RootFS:       v1.RootFS{Type: "layers"},
		Config: v1.Config{
			User:         fmt.Sprintf("%d:%d", uid, uid),
			Entrypoint:   []string{binPath},
			Cmd:          []string{"help"},
			WorkingDir:   home,
			Env:          []string{"PATH=/usr/local/bin", "HOME=" + home},
			ExposedPorts: map[string]struct{}{"8000/tcp": {}, "8001/tcp": {}},
			Labels:       labels,
		},
	})
	if err != nil {
		return nil, err
	}
	return mutate.Append(img, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: created, CreatedBy: "oipkit deploy/image: static oipkit binary, passwd, group, " + home + ", /tmp"},
	})
}

// newIndex gathers the platforms' images in one OCI image index.
func newIndex(bins []Binary, md Metadata) (v1.ImageIndex, error) {
	var idx v1.ImageIndex = empty.Index
	for _, b := range bins {
		img, err := newImage(b, md)
		if err != nil {
			return nil, err
		}
		p := b.Platform
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	return idx, nil
}

// writeArchive writes idx as an OCI archive: a tar of an OCI image layout
// whose index.json names idx with the tag, entries sorted, with fixed
// times, owners and modes, so that the archive's bytes are reproducible too.
func writeArchive(path string, idx v1.ImageIndex, md Metadata) error {
	dir, err := os.MkdirTemp("", "oipkit-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": md.Version,
		"io.containerd.image.name":          md.Name + ":" + md.Version,
	})); err != nil {
		return err
	}

	var names []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		names = append(names, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return err
	}
	slices.Sort(names)

	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	tw := tar.NewWriter(f)
	for _, name := range names {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		h := &tar.Header{Name: name, ModTime: md.Created, Format: tar.FormatPAX, Mode: 0o644, Typeflag: tar.TypeReg, Size: fi.Size()}
		if fi.IsDir() {
			h.Name, h.Mode, h.Typeflag, h.Size = name+"/", 0o755, tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !fi.IsDir() {
			if err := copyFile(tw, filepath.Join(dir, name)); err != nil {
				return err
			}
		}
	}
	if err := tw.Close(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func copyFile(w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

func platformString(p v1.Platform) string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// parsePlatform reads "linux/amd64" or "linux/arm64/v8".
func parsePlatform(s string) (v1.Platform, error) {
	parts := strings.Split(s, "/")
	if len(parts) < 2 || len(parts) > 3 || parts[0] != "linux" || parts[1] == "" {
		return v1.Platform{}, fmt.Errorf("platform %q: want linux/ARCH[/VARIANT]", s)
	}
	p := v1.Platform{OS: parts[0], Architecture: parts[1]}
	if len(parts) == 3 {
		p.Variant = parts[2]
	}
	return p, nil
}
