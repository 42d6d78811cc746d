package testenv

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Eventually polls cond every 50 ms until it holds or timeout passes, failing the test with the
// last error then; it returns how long the condition took, for the timings tests report.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) time.Duration {
	t.Helper()
	start := time.Now()
	var last error
	for time.Since(start) < timeout {
		ok, err := cond()
		if ok {
			return time.Since(start)
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s (last error: %v)", timeout, what, last)
	return 0
}

// Consistently checks cond every 100 ms for the whole of d and fails the test at the first error:
// "nothing happens" made a check that can fail at any moment of the window, not only at its end.
func Consistently(t testing.TB, d time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if err := cond(); err != nil {
			t.Fatalf("%s did not hold for %s: %v", what, d, err)
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// FreePort is a TCP port on 127.0.0.1 that nothing listens on now, below the kernel's
// ephemeral range: a port from that range (what a listen on port 0 gives) can be taken as the
// local port of any outgoing connection between this check and the bind of the process it is
// meant for, which then fails with "address already in use" (an e2e operator did, at random).
func FreePort() (int, error) {
	low := ephemeralLow()
	for range 200 {
		port := 1024 + rand.IntN(low-1024)
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue // taken: try another
		}
		_ = l.Close()
		return port, nil
	}
	return 0, fmt.Errorf("no free TCP port on 127.0.0.1 below %d after 200 tries", low)
}

// ephemeralLow is the first port of the kernel's ephemeral range (32768 when unknown).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n <= 2048 {
		return 32768
	}
	return n
}
