package testenv

import (
	"encoding/json"
	"fmt"
	"strings"
)

// LogTail is the last n entries of a JSON log (one object per line, as the operator writes it),
// made readable in a CI log: a run of lines with the same level and message (the embedded LWS
// repeats one error, with its stack trace, many times a second) is its first line and a count of
// the others, and every line is cut at width characters. Lines that are not JSON are kept as
// they are, each its own entry.
func LogTail(log string, n, width int) string {
	type entry struct {
		line, key string
		more      int
	}
	var entries []entry
	for _, line := range strings.Split(strings.TrimRight(log, "\n"), "\n") {
		key := ""
		var fields struct{ Level, Msg string }
		if json.Unmarshal([]byte(line), &fields) == nil && fields.Msg != "" {
			key = fields.Level + "\x00" + fields.Msg
		}
		if last := len(entries) - 1; key != "" && last >= 0 && entries[last].key == key {
			entries[last].more++
			continue
		}
		entries = append(entries, entry{line: line, key: key})
	}
	entries = entries[max(0, len(entries)-n):]
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		line := e.line
		if len(line) > width {
			line = strings.ToValidUTF8(line[:width], "") + "…"
		}
		if e.more > 0 {
			line += fmt.Sprintf("\n    (and %d more lines with this message)", e.more)
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}
