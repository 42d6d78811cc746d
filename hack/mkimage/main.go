// Command mkimage packs static binaries into a one-layer image archive (the docker-archive
// format `ctr images import` reads), with no registry, no Docker and no base image: the
// real-node cluster (hack/realnode.sh) imports the operator, fake-engine and pause images so.
//
//	mkimage --ref localhost/kubectl-llm:dev --dockerfile hack/release/Dockerfile --file /kubectl-llm=bin/kubectl-llm --out op.tar
//	mkimage --ref localhost/fake-engine:dev --entrypoint /fake-engine --file /fake-engine=bin/fake-engine --out fe.tar
//
// --dockerfile takes the image's USER, ENTRYPOINT and CMD from the release Dockerfile, so the
// image runs the binary the way the published one does (the base image's files, distroless'
// CA bundle and time zones, are not there: nothing in-cluster reads them). The archive is
// reproducible: fixed file times and owners.
package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
)

type fileList []string

func (f *fileList) String() string     { return strings.Join(*f, ",") }
func (f *fileList) Set(v string) error { *f = append(*f, v); return nil }

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	ref := fs.String("ref", "", "image reference, e.g. localhost/fake-engine:dev")
	out := fs.String("out", "", "archive to write")
	dockerfile := fs.String("dockerfile", "", "take USER, ENTRYPOINT and CMD from this Dockerfile")
	entrypoint := fs.String("entrypoint", "", "entrypoint (one path), when there is no --dockerfile")
	user := fs.String("user", "", "user:group to run as, when there is no --dockerfile")
	var files fileList
	fs.Var(&files, "file", "DEST=SRC: put the file SRC at DEST in the image (repeatable; the same SRC twice is one file, hard-linked)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *ref == "" || *out == "" || len(files) == 0 {
		return errors.New("--ref, --out and at least one --file are required")
	}
	cfg := Config{User: *user}
	if *entrypoint != "" {
		cfg.Entrypoint = []string{*entrypoint}
	}
	if *dockerfile != "" {
		b, err := os.ReadFile(*dockerfile)
		if err != nil {
			return err
		}
		if cfg, err = ParseDockerfile(b); err != nil {
			return fmt.Errorf("%s: %w", *dockerfile, err)
		}
	}
	layer := map[string]string{}
	for _, f := range files {
		dest, src, ok := strings.Cut(f, "=")
		if !ok || !path.IsAbs(dest) {
			return fmt.Errorf("--file %q: want /DEST=SRC", f)
		}
		layer[dest] = src
	}
	var buf bytes.Buffer
	if err := Write(&buf, *ref, cfg, layer); err != nil {
		return err
	}
	return os.WriteFile(*out, buf.Bytes(), 0o644)
}

// Config is the part of an image's run configuration mkimage sets.
type Config struct {
	User       string   `json:"User,omitempty"`
	Entrypoint []string `json:"Entrypoint,omitempty"`
	Cmd        []string `json:"Cmd,omitempty"`
	Env        []string `json:"Env,omitempty"`
	WorkingDir string   `json:"WorkingDir,omitempty"`
}

// ParseDockerfile reads USER, ENTRYPOINT and CMD (exec form) from a Dockerfile; the last of
// each wins, as in a build.
func ParseDockerfile(b []byte) (Config, error) {
	var c Config
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		word, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(word) {
		case "USER":
			c.User = rest
		case "ENTRYPOINT", "CMD":
			var v []string
			if err := json.Unmarshal([]byte(rest), &v); err != nil {
				return c, fmt.Errorf("%s %s: only the exec form ([\"…\"]) is supported", word, rest)
			}
			if strings.EqualFold(word, "CMD") {
				c.Cmd = v
			} else {
				c.Entrypoint = v
			}
		}
	}
	if len(c.Entrypoint) == 0 {
		return c, errors.New("no ENTRYPOINT")
	}
	return c, sc.Err()
}

// Write writes a docker-archive holding one layer made of files (image path → local path)
// plus /etc/passwd, /etc/group and /tmp.
func Write(w io.Writer, ref string, cfg Config, files map[string]string) error {
	layer, err := buildLayer(cfg.User, files)
	if err != nil {
		return err
	}
	diffID := sha256.Sum256(layer)
	if cfg.Env == nil {
		cfg.Env = []string{"PATH=/"}
	}
	if cfg.WorkingDir == "" {
		cfg.WorkingDir = "/"
	}
	config, err := json.Marshal(map[string]any{
		"architecture": "amd64", "os": "linux", "config": cfg,
		"rootfs":  map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + hex.EncodeToString(diffID[:])}},
		"history": []map[string]string{{"created_by": "hack/mkimage"}},
	})
	if err != nil {
		return err
	}
	cfgSum := sha256.Sum256(config)
	cfgName := hex.EncodeToString(cfgSum[:]) + ".json"
	manifest, err := json.Marshal([]map[string]any{{"Config": cfgName, "RepoTags": []string{ref}, "Layers": []string{"layer.tar"}}})
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	for _, e := range []struct {
		name string
		body []byte
	}{{"manifest.json", manifest}, {cfgName, config}, {"layer.tar", layer}} {
		if err := tw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), Format: tar.FormatPAX}); err != nil {
			return err
		}
		if _, err := tw.Write(e.body); err != nil {
			return err
		}
	}
	return tw.Close()
}

func buildLayer(user string, files map[string]string) ([]byte, error) {
	uid, gid := "0", "0"
	if user != "" {
		u, g, _ := strings.Cut(user, ":")
		uid, gid = u, u
		if g != "" {
			gid = g
		}
	}
	passwd := "root:x:0:0:root:/root:/sbin/nologin\n"
	group := "root:x:0:\n"
	if uid != "0" {
		passwd += fmt.Sprintf("nonroot:x:%s:%s:nonroot:/home/nonroot:/sbin/nologin\n", uid, gid)
		group += fmt.Sprintf("nonroot:x:%s:\n", gid)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, mode int64) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, Format: tar.FormatPAX})
	}
	file := func(name string, mode int64, body []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(body)), Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	for _, d := range []string{"etc/", "tmp/"} {
		mode := int64(0o755)
		if d == "tmp/" {
			mode = 0o1777
		}
		if err := dir(d, mode); err != nil {
			return nil, err
		}
	}
	if err := file("etc/passwd", 0o644, []byte(passwd)); err != nil {
		return nil, err
	}
	if err := file("etc/group", 0o644, []byte(group)); err != nil {
		return nil, err
	}
	dests := make([]string, 0, len(files))
	for d := range files {
		dests = append(dests, d)
	}
	sort.Strings(dests)
	made := map[string]bool{"etc/": true, "tmp/": true}
	written := map[string]string{} // local path → first image path, for hard links
	for _, d := range dests {
		name := strings.TrimPrefix(path.Clean(d), "/")
		var parents []string // outermost first
		for p := path.Dir(name); p != "."; p = path.Dir(p) {
			parents = append([]string{p + "/"}, parents...)
		}
		for _, p := range parents {
			if !made[p] {
				made[p] = true
				if err := dir(p, 0o755); err != nil {
					return nil, err
				}
			}
		}
		src := files[d]
		if first, ok := written[src]; ok {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeLink, Name: name, Linkname: first, Mode: 0o755, Format: tar.FormatPAX}); err != nil {
				return nil, err
			}
			continue
		}
		body, err := os.ReadFile(src)
		if err != nil {
			return nil, err
		}
		if err := file(name, 0o755, body); err != nil {
			return nil, err
		}
		written[src] = name
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
