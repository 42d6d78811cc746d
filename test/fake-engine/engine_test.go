package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// clock is a settable time for the engine's load delay.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func get(t *testing.T, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

func post(t *testing.T, srv *httptest.Server, path string, form url.Values) int {
	t.Helper()
	resp, err := http.PostForm(srv.URL+path, form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestHealthFailsUntilTheLoadDelayHasPassed(t *testing.T) {
	c := &clock{t: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	srv := httptest.NewServer(New(Config{Model: "Qwen/Qwen3-0.6B", Flavor: FlavorVLLM, LoadDelay: 30 * time.Second, Now: c.now}).Handler())
	defer srv.Close()

	if code, body := get(t, srv, "/health"); code != http.StatusServiceUnavailable || !strings.Contains(body, "30s left") {
		t.Fatalf("at start: /health = %d %q, want 503 saying 30s left", code, body)
	}
	if code, _ := get(t, srv, "/v1/models"); code != http.StatusServiceUnavailable {
		t.Fatalf("while loading: /v1/models = %d, want 503", code)
	}
	c.add(29 * time.Second)
	if code, _ := get(t, srv, "/health"); code != http.StatusServiceUnavailable {
		t.Fatalf("after 29s: /health = %d, want 503", code)
	}
	c.add(time.Second)
	if code, _ := get(t, srv, "/health"); code != http.StatusOK {
		t.Fatalf("after 30s: /health = %d, want 200", code)
	}
	code, body := get(t, srv, "/v1/models")
	var models struct {
		Object string `json:"object"`
		Data   []struct {
			ID     string `json:"id"`
			Object string `json:"object"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &models); err != nil || code != http.StatusOK {
		t.Fatalf("/v1/models = %d %q (%v)", code, body, err)
	}
	if models.Object != "list" || len(models.Data) != 1 || models.Data[0].ID != "Qwen/Qwen3-0.6B" || models.Data[0].Object != "model" {
		t.Fatalf("/v1/models = %+v, want one model Qwen/Qwen3-0.6B", models)
	}
}

func TestHealthNeverSucceedsWithANegativeDelayAndCanBeMadeSick(t *testing.T) {
	never := httptest.NewServer(New(Config{Model: "m", Flavor: FlavorVLLM, LoadDelay: -1}).Handler())
	defer never.Close()
	if code, body := get(t, never, "/health"); code != http.StatusServiceUnavailable || !strings.Contains(body, "never") {
		t.Fatalf("never: /health = %d %q", code, body)
	}

	srv := httptest.NewServer(New(Config{Model: "m", Flavor: FlavorVLLM}).Handler())
	defer srv.Close()
	if code, _ := get(t, srv, "/health"); code != http.StatusOK {
		t.Fatalf("no delay: /health = %d, want 200", code)
	}
	if code := post(t, srv, "/fake/health", url.Values{"healthy": {"false"}}); code != http.StatusNoContent {
		t.Fatalf("POST /fake/health = %d", code)
	}
	if code, _ := get(t, srv, "/health"); code != http.StatusServiceUnavailable {
		t.Fatalf("made sick: /health = %d, want 503", code)
	}
	post(t, srv, "/fake/health", url.Values{"healthy": {"true"}})
	if code, _ := get(t, srv, "/health"); code != http.StatusOK {
		t.Fatalf("made healthy again: /health = %d, want 200", code)
	}
	if code := post(t, srv, "/fake/health", url.Values{"healthy": {"maybe"}}); code != http.StatusBadRequest {
		t.Fatalf("healthy=maybe: %d, want 400", code)
	}
}

func TestMetricsUseTheEnginesNamesAndCanBeSet(t *testing.T) {
	srv := httptest.NewServer(New(Config{Model: "qwen", Flavor: FlavorVLLM, Gauges: Gauges{Waiting: 1}}).Handler())
	defer srv.Close()
	want := func(waiting, running, kv string) string {
		return `
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="qwen"} ` + waiting + `
# HELP vllm:num_requests_running Number of requests currently running.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="qwen"} ` + running + `
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{model_name="qwen"} ` + kv + `
# HELP vllm:gpu_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{model_name="qwen"} ` + kv + `
`
	}
	// ScrapeAndCompare parses the response with Prometheus' own text parser.
	if err := testutil.ScrapeAndCompare(srv.URL+"/metrics", strings.NewReader(want("1", "0", "0"))); err != nil {
		t.Fatalf("initial metrics: %v", err)
	}
	if code := post(t, srv, "/fake/metrics", url.Values{"waiting": {"7"}, "running": {"3"}, "kv_cache": {"0.85"}}); code != http.StatusNoContent {
		t.Fatalf("POST /fake/metrics = %d", code)
	}
	if err := testutil.ScrapeAndCompare(srv.URL+"/metrics", strings.NewReader(want("7", "3", "0.85"))); err != nil {
		t.Fatalf("after setting: %v", err)
	}
	// A bad value changes nothing, not even the valid ones beside it.
	if code := post(t, srv, "/fake/metrics", url.Values{"waiting": {"2"}, "kv_cache": {"1.5"}}); code != http.StatusBadRequest {
		t.Fatalf("kv_cache=1.5: %d, want 400", code)
	}
	if err := testutil.ScrapeAndCompare(srv.URL+"/metrics", strings.NewReader(want("7", "3", "0.85"))); err != nil {
		t.Fatalf("after a refused update: %v", err)
	}
}

func TestSGLangFlavorExportsSGLangNames(t *testing.T) {
	srv := httptest.NewServer(New(Config{Model: "m", Flavor: FlavorSGLang, Gauges: Gauges{Waiting: 2, Running: 1, KVCache: 0.5}}).Handler())
	defer srv.Close()
	_, body := get(t, srv, "/metrics")
	for _, line := range []string{`sglang:num_queue_reqs{model_name="m"} 2`, `sglang:num_running_reqs{model_name="m"} 1`, `sglang:token_usage{model_name="m"} 0.5`} {
		if !strings.Contains(body, line) {
			t.Errorf("metrics lack %q:\n%s", line, body)
		}
	}
	if strings.Contains(body, "vllm:") {
		t.Errorf("sglang flavor exports vllm names:\n%s", body)
	}
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestParse(t *testing.T) {
	cases := []struct {
		name    string
		argv0   string
		args    []string
		env     map[string]string
		want    options
		wantErr string
	}{
		{name: "defaults from the operator's environment", argv0: "fake-engine", env: map[string]string{"LLM_PORT": "8080", "LLM_MODEL": "Qwen/Qwen3-0.6B"},
			want: options{addr: ":8080", model: "Qwen/Qwen3-0.6B", flavor: FlavorVLLM}},
		{name: "flags", argv0: "fake-engine", args: []string{"--load-delay=5s", "--flavor=sglang", "--waiting=4", "--kv-cache=0.25"},
			want: options{addr: ":8000", model: "fake-model", flavor: FlavorSGLang, loadDelay: 5 * time.Second, gauges: Gauges{Waiting: 4, KVCache: 0.25}}},
		{name: "never from the environment", argv0: "fake-engine", env: map[string]string{"FAKE_ENGINE_LOAD_DELAY": "never"},
			want: options{addr: ":8000", model: "fake-model", flavor: FlavorVLLM, loadDelay: -1}},
		{name: "the vLLM command line the operator generates", argv0: "vllm",
			args: []string{"serve", "/models/qwen", "--host", "0.0.0.0", "--port", "9000", "--tensor-parallel-size", "1", "--served-model-name", "qwen"},
			env:  map[string]string{"FAKE_ENGINE_LOAD_DELAY": "2s"},
			want: options{addr: ":9000", model: "qwen", flavor: FlavorVLLM, loadDelay: 2 * time.Second}},
		{name: "vllm without serve", argv0: "vllm", args: []string{"--port", "1"}, wantErr: "vllm serve MODEL"},
		{name: "a bad delay", argv0: "fake-engine", args: []string{"--load-delay=soon"}, wantErr: "load delay"},
		{name: "a negative delay", argv0: "fake-engine", args: []string{"--load-delay=-5s"}, wantErr: "load delay"},
		{name: "an unknown flavor", argv0: "fake-engine", args: []string{"--flavor=tgi"}, wantErr: "want vllm or sglang"},
		{name: "kv cache over 1", argv0: "fake-engine", args: []string{"--kv-cache=2"}, wantErr: "--kv-cache"},
		{name: "stray arguments", argv0: "fake-engine", args: []string{"serve"}, wantErr: "unexpected arguments"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parse(tc.argv0, tc.args, env(tc.env), &bytes.Buffer{})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestRunServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, "fake-engine", []string{"--listen=127.0.0.1:0", "--load-delay=200ms"}, env(nil), &bytes.Buffer{}, ready)
	}()
	addr := <-ready
	health := func() int {
		resp, err := http.Get("http://" + addr.String() + "/health")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := health(); code != http.StatusServiceUnavailable {
		t.Fatalf("at once: %d, want 503", code)
	}
	deadline := time.Now().Add(5 * time.Second)
	for health() != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("/health not 200 5s after a 200ms load delay")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run after cancel: %v", err)
	}
}

func TestDialAndResolveSayWhatHappened(t *testing.T) {
	srv := httptest.NewServer(New(Config{Model: "m", Flavor: FlavorVLLM}).Handler())
	defer srv.Close()
	attempt := func(path string) Attempt {
		t.Helper()
		code, body := get(t, srv, path)
		var a Attempt
		if err := json.Unmarshal([]byte(body), &a); err != nil || code != http.StatusOK {
			t.Fatalf("%s = %d %q (%v)", path, code, body, err)
		}
		return a
	}
	// The test server itself is reachable; a closed port is refused.
	if a := attempt("/fake/dial?addr=" + srv.Listener.Addr().String()); !a.OK {
		t.Fatalf("dial the server itself: %+v", a)
	}
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := closed.Addr().String()
	closed.Close()
	if a := attempt("/fake/dial?addr=" + addr); a.OK || !strings.Contains(a.Error, "refused") {
		t.Fatalf("dial a closed port: %+v", a)
	}
	if a := attempt("/fake/resolve?host=localhost"); !a.OK || len(a.Addrs) == 0 {
		t.Fatalf("resolve localhost: %+v", a)
	}
	if code, _ := get(t, srv, "/fake/dial?addr=nohost"); code != http.StatusBadRequest {
		t.Fatalf("addr without a port: %d, want 400", code)
	}
}
