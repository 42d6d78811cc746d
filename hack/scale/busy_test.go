package main

import "testing"

// The machine's busy share counts user, nice, system, irq, softirq and steal, not idle or iowait,
// summed over the cores (the first line of /proc/stat).
func TestTheMachineBusyShareBetweenTwoReadings(t *testing.T) {
	before, err := parseMachineTicks("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 50 0 25 400 25 0 0 0 0 0\n")
	if err != nil {
		t.Fatal(err)
	}
	// 190 ticks busy of 200: user 120, system 60, irq 5, softirq 5; idle 8, iowait 2.
	after, err := parseMachineTicks("cpu  220 0 110 808 52 5 5 0 0 0\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := busySince(before, after); got != 0.95 {
		t.Errorf("busy = %v, want 0.95", got)
	}
	if got := busySince(after, after); got != 0 {
		t.Errorf("busy over no time = %v, want 0", got)
	}
}

func TestAStatWithoutTheMachineLineIsAnError(t *testing.T) {
	for _, stat := range []string{"", "cpu0 1 2 3 4 5 6 7 8\n", "cpu 1 2 x 4 5 6 7 8\n"} {
		if _, err := parseMachineTicks(stat); err == nil {
			t.Errorf("%q: want an error", stat)
		}
	}
}
