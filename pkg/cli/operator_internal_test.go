package cli

import (
	"net"
	"testing"
)

func TestAPIServerOnThisMachine(t *testing.T) {
	local := []net.IP{net.ParseIP("10.1.2.3"), net.ParseIP("fd00::7")}
	for _, tc := range []struct {
		host string
		want bool
	}{
		{"https://127.0.0.1:6443", true},
		{"https://127.0.0.9:6443", true},
		{"https://localhost:32766", true},
		{"https://[::1]:6443", true},
		{"https://10.1.2.3:6443", true},
		{"https://[fd00::7]:443", true},
		{"10.1.2.3:6443", true},
		{"https://10.1.2.4:6443", false},
		{"https://api.example.com:6443", false}, // names are not resolved: remote
		{"https://kubernetes.default.svc", false},
		{"https://[fd00::8]:443", false},
	} {
		if got := apiServerOnThisMachine(tc.host, local); got != tc.want {
			t.Errorf("apiServerOnThisMachine(%q) = %v, want %v", tc.host, got, tc.want)
		}
	}
}
