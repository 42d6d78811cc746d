// Command fake-engine stands in for vLLM or SGLang on the real-node test cluster
// (hack/realnode.sh): an HTTP server whose /health fails until a load delay has passed (weight
// loading), with /v1/models and the engines' Prometheus metric names, whose values can be set
// while it runs. It needs no GPU and downloads nothing.
//
// As a ModelServing with engine type custom (the image's entrypoint gets spec.engine.args):
//
//	engine: {type: custom, image: localhost/fake-engine:dev, args: ["--load-delay=5s"]}
//
// Run as "vllm serve MODEL --port N …" (the image also holds it as /vllm) it reads the model and
// port from that vLLM command line and ignores vLLM's other flags, so a single-node vllm serving
// with the image overridden runs it too.
//
// Flags fall back to the environment: FAKE_ENGINE_LOAD_DELAY, FAKE_ENGINE_FLAVOR, and the port and
// model from LLM_PORT and LLM_MODEL, which the operator sets on every engine container.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, filepath.Base(os.Args[0]), os.Args[1:], os.Getenv, os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "fake-engine:", err)
		os.Exit(1)
	}
}

// options are the command line of fake-engine.
type options struct {
	addr      string
	model     string
	flavor    Flavor
	loadDelay time.Duration
	gauges    Gauges
}

func parse(argv0 string, args []string, getenv func(string) string, stderr io.Writer) (options, error) {
	port := getenv("LLM_PORT")
	if port == "" {
		port = "8000"
	}
	o := options{model: getenv("LLM_MODEL")}
	if o.model == "" {
		o.model = "fake-model"
	}
	if argv0 == "vllm" {
		return parseVLLM(o, port, args, getenv)
	}
	fs := flag.NewFlagSet("fake-engine", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.addr, "listen", ":"+port, "address to listen on (default :$LLM_PORT, else :8000)")
	fs.StringVar(&o.model, "model", o.model, "the served model name (default $LLM_MODEL)")
	flavor := fs.String("flavor", envOr(getenv, "FAKE_ENGINE_FLAVOR", "vllm"), "whose metric names to export: vllm or sglang")
	delay := fs.String("load-delay", envOr(getenv, "FAKE_ENGINE_LOAD_DELAY", "0s"), `how long /health fails after start (a Go duration), or "never"`)
	fs.Float64Var(&o.gauges.Waiting, "waiting", 0, "initial number of waiting requests")
	fs.Float64Var(&o.gauges.Running, "running", 0, "initial number of running requests")
	fs.Float64Var(&o.gauges.KVCache, "kv-cache", 0, "initial KV-cache use, 0..1")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	if o.flavor, err = ParseFlavor(*flavor); err != nil {
		return o, err
	}
	if o.loadDelay, err = parseDelay(*delay); err != nil {
		return o, err
	}
	if o.gauges.KVCache < 0 || o.gauges.KVCache > 1 || o.gauges.Waiting < 0 || o.gauges.Running < 0 {
		return o, errors.New("--waiting and --running must be >= 0, --kv-cache between 0 and 1")
	}
	return o, nil
}

// parseVLLM reads "serve MODEL [--port N] [--served-model-name NAME] …" and skips the rest.
func parseVLLM(o options, port string, args []string, getenv func(string) string) (options, error) {
	if len(args) < 2 || args[0] != "serve" {
		return o, fmt.Errorf("as vllm: want \"vllm serve MODEL …\", got %q", args)
	}
	o.model, o.flavor = args[1], FlavorVLLM
	for i := 2; i < len(args); i++ {
		name, value, hasValue := splitFlag(args[i])
		if !hasValue && i+1 < len(args) {
			value = args[i+1]
		}
		switch name {
		case "--port":
			if _, err := strconv.Atoi(value); err != nil {
				return o, fmt.Errorf("as vllm: --port %q is not a number", value)
			}
			port = value
		case "--served-model-name":
			o.model = value
		}
	}
	o.addr = ":" + port
	var err error
	o.loadDelay, err = parseDelay(envOr(getenv, "FAKE_ENGINE_LOAD_DELAY", "0s"))
	return o, err
}

func splitFlag(a string) (name, value string, ok bool) {
	for i := 0; i < len(a); i++ {
		if a[i] == '=' {
			return a[:i], a[i+1:], true
		}
	}
	return a, "", false
}

func parseDelay(s string) (time.Duration, error) {
	if s == "never" {
		return -1, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("load delay %q: want a duration >= 0 (e.g. 30s) or never", s)
	}
	return d, nil
}

func envOr(getenv func(string) string, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}

// run serves until ctx ends. ready, when not nil, receives the listening address.
func run(ctx context.Context, argv0 string, args []string, getenv func(string) string, stderr io.Writer, ready chan<- net.Addr) error {
	o, err := parse(argv0, args, getenv, stderr)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	e := New(Config{Model: o.model, Flavor: o.flavor, LoadDelay: o.loadDelay, Gauges: o.gauges})
	srv := &http.Server{Handler: e.Handler(), ReadHeaderTimeout: 5 * time.Second}
	delay := o.loadDelay.String()
	if o.loadDelay < 0 {
		delay = "never"
	}
	fmt.Fprintf(stderr, "fake-engine: serving %s (%s metrics) on %s, healthy after %s\n", o.model, o.flavor, ln.Addr(), delay)
	if ready != nil {
		ready <- ln.Addr()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}
