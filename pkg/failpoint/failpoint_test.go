package failpoint

import (
	"bytes"
	"strings"
	"testing"
)

func TestHitStopsOnlyAtTheNamedPointInScope(t *testing.T) {
	cases := []struct {
		env, point, key string
		stops           bool
	}{
		{"", "after-revision", "ns/a", false},
		{"after-revision", "after-revision", "ns/a", true},
		{"after-revision", "after-lws", "ns/a", false},
		{" after-revision ", "after-revision", "ns/a", true},
		{"after-revision@ns/a", "after-revision", "ns/a", true},
		{"after-revision@ns/a", "after-revision", "ns/b", false},
		{"after-revision@ns/a", "after-lws", "ns/a", false},
	}
	for _, tc := range cases {
		var code int
		var log bytes.Buffer
		s := Parse(tc.env, func(c int) { code = c }, &log)
		s.Hit(tc.point, tc.key)
		if stopped := code == ExitCode; stopped != tc.stops {
			t.Errorf("%q at %s for %s: stopped %v, want %v", tc.env, tc.point, tc.key, stopped, tc.stops)
		}
		if tc.stops && !strings.Contains(log.String(), "failpoint "+tc.point+" reached for "+tc.key) {
			t.Errorf("%q: log %q does not say where it stopped", tc.env, log.String())
		}
	}
}

func TestTheZeroSetIsInert(t *testing.T) {
	var s Set
	if s.Active() {
		t.Fatal("the zero Set is active")
	}
	s.Hit("after-revision", "ns/a") // must not call a nil exit
}
