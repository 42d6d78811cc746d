package krew

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"text/template"

	"sigs.k8s.io/yaml"
)

// plugin is the part of krew's Plugin (krew.googlecontainertools.github.com/v1alpha2) we check.
type plugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string     `json:"version"`
		Homepage         string     `json:"homepage"`
		ShortDescription string     `json:"shortDescription"`
		Description      string     `json:"description"`
		Caveats          string     `json:"caveats"`
		Platforms        []platform `json:"platforms"`
	} `json:"spec"`
}

type platform struct {
	Selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
	URI    string `json:"uri"`
	Sha256 string `json:"sha256"`
	Bin    string `json:"bin"`
}

// render fills the template as the release does: the tag, and each archive's uri and sha256.
func render(t *testing.T, tag string) []byte {
	t.Helper()
	funcs := template.FuncMap{"addURIAndSha": func(uri, tag string) string {
		uri = strings.ReplaceAll(uri, "{{ .TagName }}", tag)
		return fmt.Sprintf("uri: %s\n    sha256: %x", uri, sha256.Sum256([]byte(uri)))
	}}
	tmpl, err := template.New("llm.yaml").Funcs(funcs).Parse(Manifest)
	if err != nil {
		t.Fatalf("llm.yaml is not a valid template: %v", err)
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, map[string]string{"TagName": tag}); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestTheManifestFollowsKrewsRules(t *testing.T) {
	var p plugin
	if err := yaml.UnmarshalStrict(render(t, "v0.3.1"), &p); err != nil {
		t.Fatalf("rendered manifest: %v", err)
	}
	check := func(ok bool, format string, args ...any) {
		t.Helper()
		if !ok {
			t.Errorf(format, args...)
		}
	}
	check(p.APIVersion == "krew.googlecontainertools.github.com/v1alpha2" && p.Kind == "Plugin", "apiVersion/kind = %s/%s", p.APIVersion, p.Kind)
	check(p.Metadata.Name == "llm", "name = %q; the plugin is invoked as kubectl llm, so the binary kubectl-llm means name llm", p.Metadata.Name)
	check(regexp.MustCompile(`^v\d+\.\d+\.\d+$`).MatchString(p.Spec.Version), "version %q is not vX.Y.Z", p.Spec.Version)
	check(strings.HasPrefix(p.Spec.Homepage, "https://"), "homepage %q", p.Spec.Homepage)
	check(p.Spec.ShortDescription != "" && len(p.Spec.ShortDescription) <= 50, "shortDescription %q must be 1-50 characters", p.Spec.ShortDescription)
	check(p.Spec.Description != "", "description is required")
	check(strings.Contains(p.Spec.Caveats, "kubectl llm install"), "caveats must say how to install the operator")

	seen := map[string]int{}
	sha := regexp.MustCompile(`^[0-9a-f]{64}$`)
	for _, pl := range p.Spec.Platforms {
		l := pl.Selector.MatchLabels
		key := l["os"] + "/" + l["arch"]
		seen[key]++
		check(len(l) == 2 && l["os"] != "" && l["arch"] != "", "%s: selector must match exactly os and arch: %v", key, l)
		check(strings.HasPrefix(pl.URI, "https://") && strings.Contains(pl.URI, "/v0.3.1/"), "%s: uri %q", key, pl.URI)
		wantExt := ".tar.gz"
		wantBin := "kubectl-llm"
		if l["os"] == "windows" {
			wantExt, wantBin = ".zip", "kubectl-llm.exe"
		}
		check(strings.HasSuffix(pl.URI, "_"+l["os"]+"_"+l["arch"]+wantExt), "%s: uri %q does not name this platform's %s archive", key, pl.URI, wantExt)
		check(sha.MatchString(pl.Sha256), "%s: sha256 %q", key, pl.Sha256)
		check(pl.Bin == wantBin, "%s: bin %q, want %q", key, pl.Bin, wantBin)
	}
	for _, os := range []string{"linux", "darwin", "windows"} {
		for _, arch := range []string{"amd64", "arm64"} {
			check(seen[os+"/"+arch] == 1, "%s/%s has %d platforms, want exactly one", os, arch, seen[os+"/"+arch])
		}
	}
	check(len(seen) == 6, "platforms %v, want the 6 of linux/darwin/windows × amd64/arm64", seen)
}

// The archives the manifest points at are the ones goreleaser makes.
func TestTheArchiveNamesAreGoreleasers(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Archives []struct {
			NameTemplate    string   `json:"name_template"`
			Formats         []string `json:"formats"`
			FormatOverrides []struct {
				Goos    string   `json:"goos"`
				Formats []string `json:"formats"`
			} `json:"format_overrides"`
		} `json:"archives"`
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Archives) != 1 {
		t.Fatalf("want one archive in .goreleaser.yaml, got %d", len(cfg.Archives))
	}
	a := cfg.Archives[0]
	var p plugin
	if err := yaml.Unmarshal(render(t, "v1.2.3"), &p); err != nil {
		t.Fatal(err)
	}
	for _, pl := range p.Spec.Platforms {
		os, arch := pl.Selector.MatchLabels["os"], pl.Selector.MatchLabels["arch"]
		name := strings.NewReplacer("{{ .Tag }}", "v1.2.3", "{{ .Os }}", os, "{{ .Arch }}", arch).Replace(a.NameTemplate)
		format := a.Formats[0]
		for _, o := range a.FormatOverrides {
			if o.Goos == os {
				format = o.Formats[0]
			}
		}
		if want := "/" + name + "." + format; !strings.HasSuffix(pl.URI, want) {
			t.Errorf("%s/%s: krew points at %s, goreleaser makes …%s", os, arch, pl.URI, want)
		}
	}
}
