package testenv

import (
	"net"
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

// FreePort is a TCP port on 127.0.0.1 that nothing listens on now.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
