package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func readTar(t *testing.T, b []byte) (map[string][]byte, map[string]*tar.Header) {
	t.Helper()
	bodies, headers := map[string][]byte{}, map[string]*tar.Header{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return bodies, headers
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		bodies[h.Name], headers[h.Name] = body, h
	}
}

// The operator image runs as the release Dockerfile says: its USER, ENTRYPOINT and CMD.
func TestTheReleaseDockerfileDecidesHowTheOperatorImageRuns(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "release", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseDockerfile(b)
	if err != nil {
		t.Fatal(err)
	}
	if c.User != "65532:65532" || !slices.Equal(c.Entrypoint, []string{"/kubectl-llm"}) || !slices.Equal(c.Cmd, []string{"operator"}) {
		t.Fatalf("parsed %+v, want user 65532:65532, entrypoint /kubectl-llm, cmd operator", c)
	}
	if _, err := ParseDockerfile([]byte("FROM x\nENTRYPOINT /bin/app\n")); err == nil {
		t.Fatal("shell-form ENTRYPOINT accepted")
	}
}

func TestArchiveIsConsistentAndReproducible(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "fake-engine")
	if err := os.WriteFile(bin, []byte("#!binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	tool := filepath.Join(dir, "tool")
	if err := os.WriteFile(tool, []byte("#!tool"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := Config{User: "65532:65532", Entrypoint: []string{"/fake-engine"}}
	files := map[string]string{"/fake-engine": bin, "/vllm": bin, "/usr/bin/tool": tool}
	var one, two bytes.Buffer
	if err := Write(&one, "localhost/fake-engine:dev", cfg, files); err != nil {
		t.Fatal(err)
	}
	if err := Write(&two, "localhost/fake-engine:dev", cfg, files); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(one.Bytes(), two.Bytes()) {
		t.Fatal("two writes of the same image differ")
	}
	outer, _ := readTar(t, one.Bytes())
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(outer["manifest.json"], &manifest); err != nil || len(manifest) != 1 {
		t.Fatalf("manifest.json: %v %s", err, outer["manifest.json"])
	}
	m := manifest[0]
	if !slices.Equal(m.RepoTags, []string{"localhost/fake-engine:dev"}) || len(m.Layers) != 1 {
		t.Fatalf("manifest %+v", m)
	}
	sum := sha256.Sum256(outer[m.Config])
	if m.Config != hex.EncodeToString(sum[:])+".json" {
		t.Fatalf("config %s is not named by its digest", m.Config)
	}
	var config struct {
		Config Config
		RootFS struct {
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
	if err := json.Unmarshal(outer[m.Config], &config); err != nil {
		t.Fatal(err)
	}
	layerSum := sha256.Sum256(outer[m.Layers[0]])
	if !slices.Equal(config.RootFS.DiffIDs, []string{"sha256:" + hex.EncodeToString(layerSum[:])}) {
		t.Fatalf("diff_ids %v do not match the layer", config.RootFS.DiffIDs)
	}
	if config.Config.User != "65532:65532" || !slices.Equal(config.Config.Entrypoint, []string{"/fake-engine"}) {
		t.Fatalf("run config %+v", config.Config)
	}
	bodies, headers := readTar(t, outer[m.Layers[0]])
	if string(bodies["fake-engine"]) != "#!binary" || headers["fake-engine"].Mode&0o111 == 0 {
		t.Fatalf("fake-engine in the layer: %q mode %o", bodies["fake-engine"], headers["fake-engine"].Mode)
	}
	if h := headers["vllm"]; h == nil || h.Typeflag != tar.TypeLink || h.Linkname != "fake-engine" {
		t.Fatalf("/vllm is not a hard link to /fake-engine: %+v", h)
	}
	if headers["usr/"] == nil || headers["usr/bin/"] == nil || string(bodies["usr/bin/tool"]) != "#!tool" {
		t.Fatal("nested file or its parent directories missing")
	}
	if !bytes.Contains(bodies["etc/passwd"], []byte("nonroot:x:65532:65532:")) {
		t.Fatalf("/etc/passwd has no user 65532:\n%s", bodies["etc/passwd"])
	}
	if headers["tmp/"] == nil || headers["tmp/"].Mode != 0o1777 {
		t.Fatal("no world-writable /tmp")
	}
}
