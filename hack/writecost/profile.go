package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// apiProfile is a CPU profile of kube-apiserver being taken: its /debug/pprof/profile for
// profileSeconds, which a case's writes must fit in (the server profiles for the seconds asked,
// whatever runs). stop waits for the profile's end; the writes are timed apart from it.
type apiProfile struct {
	cancel context.CancelFunc
	done   chan error
}

// profileSeconds is how long each profile runs; the writes of a case must fit in it.
const profileSeconds = 20

// startProfile asks kube-apiserver (as cfg's user, who must be allowed /debug/pprof) for a CPU
// profile of the next profileSeconds and writes it to path when it comes.
func startProfile(cfg *rest.Config, path string) *apiProfile {
	ctx, cancel := context.WithCancel(context.Background())
	p := &apiProfile{cancel: cancel, done: make(chan error, 1)}
	go func() { p.done <- fetchProfile(ctx, cfg, path) }()
	time.Sleep(100 * time.Millisecond) // let the profiler start before the first write
	return p
}

func (p *apiProfile) stop() error {
	defer p.cancel()
	return <-p.done
}

func fetchProfile(ctx context.Context, cfg *rest.Config, path string) error {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	url := strings.TrimSuffix(cfg.Host, "/") + fmt.Sprintf("/debug/pprof/profile?seconds=%d", profileSeconds)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s: %s", resp.Status, b)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// fileName is a case's name as a file name: its first words, lower case, joined by dashes.
func fileName(name string) string {
	if i := strings.Index(name, " ("); i > 0 {
		name = name[:i]
	}
	return strings.ToLower(strings.ReplaceAll(name, " ", "-"))
}
