package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Flavor is whose metric names the engine exports.
type Flavor string

const (
	FlavorVLLM   Flavor = "vllm"
	FlavorSGLang Flavor = "sglang"
)

// Gauges are the load figures an autoscaler or a dashboard reads from an engine.
type Gauges struct {
	Waiting float64 // requests queued, not yet scheduled
	Running float64 // requests being processed
	KVCache float64 // KV-cache use, 0..1
}

// Engine is the state of one fake engine: when it becomes healthy and what its metrics say.
// Its handlers are safe for concurrent use.
type Engine struct {
	model  string
	flavor Flavor
	now    func() time.Time

	mu sync.Mutex
	// readyAt is when /health starts to succeed; the zero time means never.
	readyAt time.Time
	// sick, once set through /fake/health, fails /health whatever the time.
	sick   bool
	gauges Gauges
}

// Config is what an Engine starts from.
type Config struct {
	Model  string
	Flavor Flavor
	// LoadDelay is how long "loading the weights" takes; negative means forever (an engine that
	// never becomes healthy).
	LoadDelay time.Duration
	Gauges    Gauges
	Now       func() time.Time
}

// New makes an engine whose load starts now.
func New(c Config) *Engine {
	now := c.Now
	if now == nil {
		now = time.Now
	}
	e := &Engine{model: c.Model, flavor: c.Flavor, now: now, gauges: c.Gauges}
	if c.LoadDelay >= 0 {
		e.readyAt = now().Add(c.LoadDelay)
	}
	return e
}

// Handler serves the engine's HTTP surface:
//
//	GET  /health       200 once loaded (and not made sick), 503 before
//	GET  /v1/models    the served model, OpenAI style
//	GET  /metrics      Prometheus text format, with the engine's own metric names
//	POST /fake/metrics set gauges: waiting=, running=, kv_cache= (query or form)
//	POST /fake/health  healthy=false fails /health from now on, healthy=true lets it pass
//	GET  /fake/dial    addr=HOST:PORT: tries a TCP connection from inside the pod and says what
//	                   happened (the real-node tests check that pods cannot reach out)
//	GET  /fake/resolve host=NAME: a DNS lookup through the pod's resolv.conf
func (e *Engine) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", e.health)
	mux.HandleFunc("GET /v1/models", e.models)
	mux.HandleFunc("GET /metrics", e.metrics)
	mux.HandleFunc("POST /fake/metrics", e.setMetrics)
	mux.HandleFunc("POST /fake/health", e.setHealth)
	mux.HandleFunc("GET /fake/dial", dial)
	mux.HandleFunc("GET /fake/resolve", resolve)
	return mux
}

// Healthy says whether /health succeeds now, and if not, why.
func (e *Engine) Healthy() (bool, string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.sick:
		return false, "made unhealthy through /fake/health"
	case e.readyAt.IsZero():
		return false, "loading model weights (never finishes)"
	case e.now().Before(e.readyAt):
		return false, fmt.Sprintf("loading model weights (%s left)", e.readyAt.Sub(e.now()).Round(time.Second))
	}
	return true, ""
}

func (e *Engine) health(w http.ResponseWriter, _ *http.Request) {
	if ok, why := e.Healthy(); !ok {
		http.Error(w, why, http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK) // vLLM answers an empty 200
}

func (e *Engine) models(w http.ResponseWriter, _ *http.Request) {
	if ok, why := e.Healthy(); !ok {
		http.Error(w, why, http.StatusServiceUnavailable)
		return
	}
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
		Root    string `json:"root"`
	}
	body := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: []model{{ID: e.model, Object: "model", Created: e.readyAt.Unix(), OwnedBy: string(e.flavor), Root: e.model}}}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

// metricNames are the gauges' names per flavor: vLLM's (v1 engine; gpu_cache_usage_perc is the
// name before 0.10, still read by many dashboards) and SGLang's.
var metricNames = map[Flavor]struct {
	waiting, running []string
	kvCache          []string
}{
	FlavorVLLM: {
		waiting: []string{"vllm:num_requests_waiting"},
		running: []string{"vllm:num_requests_running"},
		kvCache: []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"},
	},
	FlavorSGLang: {
		waiting: []string{"sglang:num_queue_reqs"},
		running: []string{"sglang:num_running_reqs"},
		kvCache: []string{"sglang:token_usage"},
	},
}

func (e *Engine) metrics(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	g := e.gauges
	e.mu.Unlock()
	names := metricNames[e.flavor]
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	label := "model_name=" + strconv.Quote(e.model)
	write := func(names []string, help string, v float64) {
		for _, n := range names {
			fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n%s{%s} %s\n", n, help, n, n, label, strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	write(names.waiting, "Number of requests waiting to be processed.", g.Waiting)
	write(names.running, "Number of requests currently running.", g.Running)
	write(names.kvCache, "KV-cache usage. 1 means 100 percent usage.", g.KVCache)
}

func (e *Engine) setMetrics(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	e.mu.Lock()
	g := e.gauges
	e.mu.Unlock()
	for key, dst := range map[string]*float64{"waiting": &g.Waiting, "running": &g.Running, "kv_cache": &g.KVCache} {
		s := r.Form.Get(key)
		if s == "" {
			continue
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v < 0 || (key == "kv_cache" && v > 1) {
			http.Error(w, fmt.Sprintf("%s=%q: want a number >= 0 (kv_cache at most 1)", key, s), http.StatusBadRequest)
			return
		}
		*dst = v
	}
	e.mu.Lock()
	e.gauges = g
	e.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (e *Engine) setHealth(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	healthy, err := strconv.ParseBool(r.Form.Get("healthy"))
	if err != nil {
		http.Error(w, "healthy= must be true or false", http.StatusBadRequest)
		return
	}
	e.mu.Lock()
	e.sick = !healthy
	e.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// Attempt is the outcome of /fake/dial or /fake/resolve.
type Attempt struct {
	OK      bool     `json:"ok"`
	Error   string   `json:"error,omitempty"`
	Addrs   []string `json:"addrs,omitempty"`
	Seconds float64  `json:"seconds"`
}

func writeAttempt(w http.ResponseWriter, start time.Time, addrs []string, err error) {
	a := Attempt{OK: err == nil, Addrs: addrs, Seconds: time.Since(start).Seconds()}
	if err != nil {
		a.Error = err.Error()
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(a)
}

func dial(w http.ResponseWriter, r *http.Request) {
	addr := r.URL.Query().Get("addr")
	if _, _, err := net.SplitHostPort(addr); err != nil {
		http.Error(w, "addr= must be HOST:PORT", http.StatusBadRequest)
		return
	}
	start := time.Now()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err == nil {
		c.Close()
	}
	writeAttempt(w, start, nil, err)
}

func resolve(w http.ResponseWriter, r *http.Request) {
	host := r.URL.Query().Get("host")
	if host == "" {
		http.Error(w, "host= is required", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	start := time.Now()
	addrs, err := (&net.Resolver{PreferGo: true}).LookupHost(ctx, host)
	writeAttempt(w, start, addrs, err)
}

// ParseFlavor accepts vllm and sglang.
func ParseFlavor(s string) (Flavor, error) {
	switch f := Flavor(strings.ToLower(s)); f {
	case FlavorVLLM, FlavorSGLang:
		return f, nil
	}
	return "", fmt.Errorf("flavor %q: want vllm or sglang", s)
}
