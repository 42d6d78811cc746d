package testenv

import (
	"net"
	"strconv"
	"strings"
	"testing"
)

func TestLogTailCollapsesRepeatsAndCutsLongLines(t *testing.T) {
	log := strings.Join([]string{
		`{"level":"info","msg":"Starting workers"}`,
		`{"level":"error","msg":"More than one revision exists","stacktrace":"a"}`,
		`{"level":"error","msg":"More than one revision exists","stacktrace":"b"}`,
		`{"level":"error","msg":"More than one revision exists","stacktrace":"c"}`,
		`panic: boom`,
		`panic: boom`,
		`{"level":"info","msg":"` + strings.Repeat("x", 50) + `"}`,
	}, "\n") + "\n"
	got := LogTail(log, 4, 40)
	want := strings.Join([]string{
		`{"level":"error","msg":"More than one re…`,
		`    (and 2 more lines with this message)`,
		`panic: boom`,
		`panic: boom`,
		`{"level":"info","msg":"` + strings.Repeat("x", 17) + `…`,
	}, "\n")
	if got != want {
		t.Errorf("LogTail:\n%s\nwant:\n%s", got, want)
	}
	if got := LogTail(log, 10, 1000); !strings.HasPrefix(got, `{"level":"info","msg":"Starting workers"}`) {
		t.Errorf("with room for every entry, the first is kept:\n%s", got)
	}
}

func TestFreePortIsBelowTheEphemeralRangeAndFree(t *testing.T) {
	low := ephemeralLow()
	for range 20 {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if port < 1024 || port >= low {
			t.Fatalf("port %d: want one in [1024, %d), out of the range outgoing connections take theirs from", port, low)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			t.Fatalf("port %d is not free: %v", port, err)
		}
		_ = l.Close()
	}
}
