package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// machineTicks are the machine's CPU times from /proc/stat's first line, in clock ticks summed
// over its cores: busy (user, nice, system, irq, softirq, steal) and all (busy, idle and iowait).
type machineTicks struct{ busy, all uint64 }

// parseMachineTicks reads /proc/stat's "cpu" line (the first: every core together).
func parseMachineTicks(stat string) (machineTicks, error) {
	line, _, _ := strings.Cut(stat, "\n")
	fields := strings.Fields(line)
	if len(fields) < 8 || fields[0] != "cpu" {
		return machineTicks{}, fmt.Errorf("/proc/stat: want its first line to be the machine's cpu line, got %q", line)
	}
	var v [8]uint64 // user nice system idle iowait irq softirq steal
	for i := range v {
		if i+1 >= len(fields) {
			break
		}
		n, err := strconv.ParseUint(fields[i+1], 10, 64)
		if err != nil {
			return machineTicks{}, fmt.Errorf("/proc/stat: field %d of %q: %w", i+1, line, err)
		}
		v[i] = n
	}
	busy := v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
	return machineTicks{busy: busy, all: busy + v[3] + v[4]}, nil
}

// busySince is the share of the machine's CPU time (every core) that was busy between two
// readings, 0 when no time passed.
func busySince(before, after machineTicks) float64 {
	all := after.all - before.all
	if all == 0 || after.all < before.all {
		return 0
	}
	return float64(after.busy-before.busy) / float64(all)
}

// readMachineTicks reads the machine's CPU times now; a machine without /proc gives zeros (the
// row then reads 0 %).
func readMachineTicks() machineTicks {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineTicks{}
	}
	t, err := parseMachineTicks(string(raw))
	if err != nil {
		return machineTicks{}
	}
	return t
}

// cores is how many cores the machine has (as the Go runtime sees them).
func cores() int { return runtime.NumCPU() }
