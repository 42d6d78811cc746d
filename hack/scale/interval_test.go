package main

import (
	"strings"
	"testing"
	"time"
)

func ms(vs ...int) []time.Duration {
	out := make([]time.Duration, len(vs))
	for i, v := range vs {
		out[i] = time.Duration(v) * time.Millisecond
	}
	return out
}

func TestRatioIntervalOfASideTwiceAsSlowInEveryRoundIsTwo(t *testing.T) {
	a := [][]time.Duration{ms(100, 110, 120), ms(100, 110, 120), ms(100, 110, 120), ms(100, 110, 120)}
	b := [][]time.Duration{ms(200, 220, 240), ms(200, 220, 240), ms(200, 220, 240), ms(200, 220, 240)}
	lo, hi, ok := ratioInterval(a, b, 500, intervalRNG())
	if !ok || lo != 2 || hi != 2 {
		t.Errorf("interval = [%.3f, %.3f] ok=%v; want [2, 2]: every round of b is a round of a doubled", lo, hi, ok)
	}
}

// Rounds that drift (the cluster's state moving between rounds) make the interval wider than
// rounds with the same cases in another order, though every case is the same pooled.
func TestRatioIntervalWidensWithTheDriftBetweenRounds(t *testing.T) {
	steady := [][]time.Duration{ms(100, 200, 300), ms(100, 200, 300), ms(100, 200, 300), ms(100, 200, 300)}
	drifting := [][]time.Duration{ms(100, 100, 100), ms(200, 200, 200), ms(200, 200, 200), ms(300, 300, 300)}
	slo, shi, ok1 := ratioInterval(steady, steady, 2000, intervalRNG())
	dlo, dhi, ok2 := ratioInterval(steady, drifting, 2000, intervalRNG())
	if !ok1 || !ok2 {
		t.Fatal("no interval")
	}
	if slo > 1 || shi < 1 || dlo > 1 || dhi < 1 {
		t.Errorf("intervals [%.2f, %.2f] and [%.2f, %.2f] must contain 1: the same cases on both sides", slo, shi, dlo, dhi)
	}
	if dhi-dlo <= shi-slo {
		t.Errorf("drifting rounds gave [%.2f, %.2f], steady ones [%.2f, %.2f]: want the drifting interval wider", dlo, dhi, slo, shi)
	}
}

// Round i of each side ran one after the other and shares the cluster's state of the moment:
// rounds that drift together, each of b's the same as a's, give b's ratio of 1 with no spread,
// as a bootstrap that drew the sides' rounds apart would not (it would put one side's slow
// rounds against the other's fast ones, [0.5, 2] here).
func TestRatioIntervalOfRoundsThatDriftTogetherIsTheirRatio(t *testing.T) {
	a := [][]time.Duration{ms(100, 110), ms(200, 220), ms(300, 330), ms(400, 440), ms(150, 160), ms(350, 360)}
	b := make([][]time.Duration, len(a))
	for i, r := range a {
		for _, d := range r {
			b[i] = append(b[i], d*11/10)
		}
	}
	lo, hi, ok := ratioInterval(a, b, 2000, intervalRNG())
	if !ok || lo < 1.099 || hi > 1.101 {
		t.Errorf("interval = [%.3f, %.3f] ok=%v; want [1.1, 1.1]: every round of b is its pair of a's, 10 %% slower", lo, hi, ok)
	}
}

// A side with a round fewer (a run stopped between the sides of its last round, a file of -pool)
// is padded: the other side's last round is drawn alone.
func TestRatioIntervalPadsTheSideWithFewerRounds(t *testing.T) {
	a := [][]time.Duration{ms(100), ms(100), ms(100), ms(100)}
	b := [][]time.Duration{ms(200), ms(200), ms(200)}
	lo, hi, ok := ratioInterval(a, b, 500, intervalRNG())
	if !ok || lo != 2 || hi != 2 {
		t.Errorf("interval = [%.3f, %.3f] ok=%v; want [2, 2]", lo, hi, ok)
	}
	if _, _, ok := ratioInterval(b[:2], a, 500, intervalRNG()); ok {
		t.Error("an interval from two rounds of LWS alone")
	}
}

func TestRatioIntervalNeedsThreeRoundsASide(t *testing.T) {
	two := [][]time.Duration{ms(100), ms(120), nil}
	three := [][]time.Duration{ms(100), ms(120), ms(110)}
	if _, _, ok := ratioInterval(two, three, 100, intervalRNG()); ok {
		t.Error("an interval from two rounds (the third empty) of LWS alone")
	}
	if _, _, ok := ratioInterval(three, three, 100, intervalRNG()); !ok {
		t.Error("no interval from three rounds a side")
	}
}

// A run saved with -raw and pooled with -pool gives each case's rounds back: the pooled
// medians and counts of two files are those of their rounds together.
func TestRawRunsPoolTheirRounds(t *testing.T) {
	dir := t.TempDir()
	round := func(rec ...int) *results {
		r := &results{}
		r.byObject.recovery = ms(rec...)
		return r
	}
	first, second := dir+"/a.json", dir+"/b.json"
	if err := writeRaw(first, map[string][]*results{"lws": {round(100, 100), round(100)}, "kubectl-llm": {round(300)}}); err != nil {
		t.Fatal(err)
	}
	if err := writeRaw(second, map[string][]*results{"lws": {round(100)}, "kubectl-llm": {round(300, 300), round(300)}}); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := poolRaw(&out, []string{first, second}); err != nil {
		t.Fatal(err)
	}
	want := "| recovery, servings deleted one at a time | 100ms [100ms–100ms] (4) | 300ms [300ms–300ms] (4) | 3.00× [3.00–3.00] |"
	if !strings.Contains(out.String(), want) {
		t.Errorf("pooled:\n%s\nwant the row\n%s", out.String(), want)
	}
	if !strings.Contains(out.String(), "3 rounds of LWS alone, 3 of kubectl-llm") {
		t.Errorf("pooled:\n%s\nwant 3 rounds a side", out.String())
	}
}

// A case's interval depends on its own rounds only: the same rounds of the one-at-a-time
// recovery give the same interval whether or not the file also holds an idle recovery, whose
// row comes first and used to draw from the same generator before it.
func TestAnIntervalDoesNotDependOnTheRowsBeforeIt(t *testing.T) {
	dir := t.TempDir()
	spreadRounds := func(idle bool, base int) []*results {
		var out []*results
		for i := range 8 {
			r := &results{}
			r.byObject.recovery = ms(base+(37*i)%53, base+(71*i)%89+5, base+(113*i)%131+9, base+(29*i)%41+3)
			if idle {
				r.recovery = ms(base+13*i, base+50-i)
			}
			out = append(out, r)
		}
		return out
	}
	row := func(idle bool) string {
		path := dir + "/run.json"
		if err := writeRaw(path, map[string][]*results{"lws": spreadRounds(idle, 100), "kubectl-llm": spreadRounds(idle, 120)}); err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		if err := poolRaw(&out, []string{path}); err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(out.String(), "\n") {
			if strings.HasPrefix(line, "| recovery, servings deleted one at a time |") {
				return line
			}
		}
		t.Fatalf("no one-at-a-time recovery row in\n%s", out.String())
		return ""
	}
	alone, afterIdle := row(false), row(true)
	if !strings.Contains(alone, "[") {
		t.Fatalf("row %q has no interval", alone)
	}
	if alone != afterIdle {
		t.Errorf("the same rounds gave\n%s\nalone and\n%s\nafter an idle row", alone, afterIdle)
	}
}

// The -single case's objects are kept in a raw file and pooled as the other cases are, so that an
// -idle-only run's one-at-a-time rounds pool with another run's.
func TestRawRunsKeepTheOneAtATimeCase(t *testing.T) {
	dir := t.TempDir()
	round := func(ready, toPod int) *results {
		return &results{single: ms(ready, ready), singleToPod: ms(toPod)}
	}
	path := dir + "/idle.json"
	if err := writeRaw(path, map[string][]*results{"lws": {round(200, 50)}, "kubectl-llm": {round(220, 60)}}); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := poolRaw(&out, []string{path}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| one at a time: created → Ready | 200ms [200ms–200ms] (2) | 220ms [220ms–220ms] (2) | 1.10× |",
		"| one at a time: its LeaderWorkerSet seen → its leader pod seen | 50ms (1) | 60ms (1) | 1.20× |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("pooled:\n%s\nwant the row\n%s", out.String(), want)
		}
	}
}
