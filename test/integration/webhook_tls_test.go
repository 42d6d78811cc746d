package integration

import (
	"crypto/tls"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// The embedded LWS webhook server speaks TLS 1.2 or newer and HTTP/1.1 only.
func TestTheWebhookServerRefusesOldTLSAndHTTP2(t *testing.T) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(webhookPort))
	dial := func(c *tls.Config) (*tls.Conn, error) {
		c.InsecureSkipVerify = true // the certificate is not what this test is about
		return tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, c)
	}
	// The server may still be starting.
	testenv.Eventually(t, 30*time.Second, "the webhook server to listen", func() (bool, error) {
		conn, err := dial(&tls.Config{})
		if err == nil {
			_ = conn.Close()
		}
		return err == nil, err
	})
	if conn, err := dial(&tls.Config{MaxVersion: tls.VersionTLS11}); err == nil {
		_ = conn.Close()
		t.Errorf("a TLS 1.1 handshake succeeded; want TLS 1.2 or newer only")
	}
	conn, err := dial(&tls.Config{NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if p := conn.ConnectionState().NegotiatedProtocol; p == "h2" {
		t.Errorf("the webhook server negotiated HTTP/2; want HTTP/1.1 only")
	}
}
