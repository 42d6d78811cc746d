package operator

import (
	"strings"
	"testing"
	"time"
)

func TestCertificateUsable(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	hosts := []string{"localhost", "127.0.0.1", "kubectl-llm-webhook.kubectl-llm-system.svc"}
	ca, crt, _, err := SelfSignedCerts(hosts, now)
	if err != nil {
		t.Fatal(err)
	}
	otherCA, _, _, err := SelfSignedCerts(hosts, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		ca, crt []byte
		hosts   []string
		at      time.Time
		want    string // "" when usable
	}{
		{"fresh, for its names", ca, crt, hosts, now, ""},
		{"a subset of its names", ca, crt, hosts[:1], now, ""},
		{"expires within the lookahead", ca, crt, hosts, now.Add(340 * 24 * time.Hour), "expires at"},
		{"expired", ca, crt, hosts, now.Add(400 * 24 * time.Hour), "expires at"},
		{"another name", ca, crt, append(hosts, "operator.example.com"), now, "does not verify for operator.example.com"},
		{"another CA", otherCA, crt, hosts, now, "does not verify"},
		{"no CA", []byte("junk"), crt, hosts, now, "ca.crt holds no certificate"},
		{"no certificate", ca, []byte("junk"), hosts, now, "tls.crt holds no certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CertificateUsable(tc.ca, tc.crt, tc.hosts, tc.at, certLookahead)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("want usable, got %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("want an error containing %q, got %v", tc.want, err)
			}
		})
	}
}

// A certificate directory whose certificate no longer fits is made anew; a good one is reused.
func TestPrepareWebhookCertsReusesOnlyGoodCertificates(t *testing.T) {
	dir := t.TempDir()
	o := DefaultWebhookOptions()
	o.CertDir = dir
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	first, err := prepareWebhookCerts(o, now)
	if err != nil {
		t.Fatal(err)
	}
	again, err := prepareWebhookCerts(o, now.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if string(again.caPEM) != string(first.caPEM) {
		t.Errorf("a day later the certificates were made anew; want them reused")
	}
	late, err := prepareWebhookCerts(o, now.Add(350*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if string(late.caPEM) == string(first.caPEM) {
		t.Errorf("certificates expiring within %s were reused", certLookahead)
	}
	o.URLHost = "10.0.0.7"
	moved, err := prepareWebhookCerts(o, now.Add(350*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if string(moved.caPEM) == string(late.caPEM) {
		t.Errorf("certificates without the new URL host 10.0.0.7 were reused")
	}
}
