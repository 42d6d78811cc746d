package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// rawRun is a run's timed cases as they were measured, each side's rounds in turn, so that runs
// of one build can be pooled later (-pool): more rounds, a narrower interval.
type rawRun struct {
	Command string `json:"command"`
	// Build is the commit the operator was built from (git describe --always --dirty), so that
	// only runs of one build are pooled.
	Build string `json:"build,omitempty"`
	// Sides is, by side ("lws", "kubectl-llm"), each round's durations of each case, in
	// milliseconds.
	Sides map[string][]map[string][]float64 `json:"sides"`
}

// rawCases are the cases a raw file keeps, by name, and where each round's durations are.
var rawCases = []struct {
	name string
	of   func(*results) []time.Duration
}{
	{"recovery, idle", func(r *results) []time.Duration { return r.recovery }},
	{"rollout, idle", func(r *results) []time.Duration { return r.rollout }},
	{"recovery, servings deleted one at a time", func(r *results) []time.Duration { return r.byObject.recovery }},
	{"rollout, servings deleted one at a time", func(r *results) []time.Duration { return r.byObject.rollout }},
	{"recovery, servings deleted with their namespace", func(r *results) []time.Duration { return r.byNamespace.recovery }},
	{"rollout, servings deleted with their namespace", func(r *results) []time.Duration { return r.byNamespace.rollout }},
	// since session 30: the rollout's LeaderWorkerSet seen with the new template (for
	// kubectl-llm the operator's step in for an update), and the first steps of the cases while
	// servings are deleted one at a time, where the two sides part first
	{"rollout, servings deleted one at a time: its LeaderWorkerSet seen with the new template", func(r *results) []time.Duration { return phaseOf(r.byObject.rolloutPhases, template) }},
	{"rollout, idle: its LeaderWorkerSet seen with the new template", func(r *results) []time.Duration { return phaseOf(r.rolloutPhases, template) }},
	{"rollout, servings deleted one at a time: its first old pod marked for deletion", func(r *results) []time.Duration { return phaseOf(r.byObject.rolloutPhases, oldDeleted) }},
	{"recovery, servings deleted one at a time: its first old pod marked for deletion", func(r *results) []time.Duration { return phaseOf(r.byObject.recoveryPhases, oldDeleted) }},
	{"recovery, servings deleted one at a time: its first new pod seen", func(r *results) []time.Duration { return phaseOf(r.byObject.recoveryPhases, firstNew) }},
	// since session 32: the -single case's objects (beside the idle cases' two in an -idle-only
	// run, among the converged burst otherwise: the command says which)
	{"one at a time: created → Ready", singleCase("created → Ready")},
	{"one at a time: its LeaderWorkerSet seen → its leader pod seen", singleCase("its LeaderWorkerSet seen → its leader pod seen")},
}

// singleCase is the durations of the -single case's step named.
func singleCase(name string) func(*results) []time.Duration {
	for _, c := range singleCases {
		if c.name == name {
			return c.of
		}
	}
	panic("no -single step " + name)
}

// singleCases are the -single case's durations: each object's created → Ready and the steps
// it is made of, as the watches saw them.
var singleCases = []struct {
	name string
	of   func(*results) []time.Duration
}{
	{"created → Ready", func(r *results) []time.Duration { return r.single }},
	{"seen → its LeaderWorkerSet seen (the operator's step in, watch to watch)", func(r *results) []time.Duration { return r.singleSeenToLWS }},
	{"its LeaderWorkerSet seen → its leader pod seen", func(r *results) []time.Duration { return r.singleToPod }},
	{"leader pod seen → seen Ready", func(r *results) []time.Duration { return r.singlePodReady }},
	{"leader pod Ready → its LeaderWorkerSet's status Ready", func(r *results) []time.Duration { return r.singleToLWSReady }},
	{"LeaderWorkerSet Ready → serving Ready (the operator's step out)", func(r *results) []time.Duration { return r.singleFromLWS }},
}

func template(p phases) time.Duration   { return p.template }
func oldDeleted(p phases) time.Duration { return p.oldDeleted }
func firstNew(p phases) time.Duration   { return p.firstNew }

// phaseOf is one phase of each case.
func phaseOf(ps []phases, at func(phases) time.Duration) []time.Duration {
	var out []time.Duration
	for _, p := range ps {
		out = append(out, at(p))
	}
	return out
}

// writeRaw saves got's rounds to path.
func writeRaw(path string, got map[string][]*results) error {
	run := rawRun{Command: strings.Join(os.Args, " "), Build: builtFrom, Sides: map[string][]map[string][]float64{}}
	for side, rounds := range got {
		for _, r := range rounds {
			cases := map[string][]float64{}
			for _, c := range rawCases {
				for _, d := range c.of(r) {
					cases[c.name] = append(cases[c.name], float64(d)/float64(time.Millisecond))
				}
			}
			run.Sides[side] = append(run.Sides[side], cases)
		}
	}
	b, err := json.MarshalIndent(run, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// poolRaw prints the cases of the raw files at paths, their rounds pooled, each ratio with its
// interval.
func poolRaw(w io.Writer, paths []string) error {
	rounds := map[string][]map[string][]float64{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var run rawRun
		if err := json.Unmarshal(b, &run); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		fmt.Fprintf(w, "%s: %s (build %s)\n", p, run.Command, cmp.Or(run.Build, "not recorded"))
		// Round i of each side ran one after the other: a file's rounds are paired by index
		// (ratioInterval), so a side with fewer rounds in one file is padded before the next
		// file's rounds follow.
		n := max(len(run.Sides["lws"]), len(run.Sides["kubectl-llm"]))
		for _, side := range []string{"lws", "kubectl-llm"} {
			rs := run.Sides[side]
			rounds[side] = append(rounds[side], rs...)
			for range n - len(rs) {
				rounds[side] = append(rounds[side], nil)
			}
		}
	}
	fmt.Fprintf(w, "\n%d rounds of LWS alone, %d of kubectl-llm; median [min–max] of the cases pooled; the ratio's 95 %% interval by a bootstrap over the pairs of rounds that ran one after the other (%d resamples).\n\n",
		countRounds(rounds["lws"]), countRounds(rounds["kubectl-llm"]), intervalResamples)
	fmt.Fprintln(w, "| case | LWS alone | kubectl-llm | ratio |")
	fmt.Fprintln(w, "| --- | --- | --- | --- |")
	for _, c := range rawCases {
		a, b := durationsOf(rounds["lws"], c.name), durationsOf(rounds["kubectl-llm"], c.name)
		ma, sa := spread(pooled(a))
		mb, sb := spread(pooled(b))
		if ma == 0 && mb == 0 {
			continue
		}
		ratio := "—"
		if ma > 0 && mb > 0 {
			ratio = fmt.Sprintf("%.2f×", float64(mb)/float64(ma))
			if lo, hi, ok := ratioInterval(a, b, intervalResamples, intervalRNG()); ok {
				ratio += fmt.Sprintf(" [%.2f–%.2f]", lo, hi)
			}
		}
		fmt.Fprintf(w, "| %s | %s (%d) | %s (%d) | %s |\n", c.name, sa, len(pooled(a)), sb, len(pooled(b)), ratio)
	}
	return nil
}

// gitBuild is the commit of dir, taken when the operator is built from it (a file changed during
// the run does not make the build dirty), "" when git cannot tell.
func gitBuild(dir string) string {
	cmd := exec.Command("git", "describe", "--always", "--dirty")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// countRounds is how many of rounds are rounds measured, not a side's padding.
func countRounds(rounds []map[string][]float64) int {
	n := 0
	for _, r := range rounds {
		if r != nil {
			n++
		}
	}
	return n
}

// durationsOf is each round's durations of the case named.
func durationsOf(rounds []map[string][]float64, name string) [][]time.Duration {
	out := make([][]time.Duration, len(rounds))
	for i, r := range rounds {
		for _, v := range r[name] {
			out[i] = append(out[i], time.Duration(v*float64(time.Millisecond)))
		}
	}
	return out
}

func pooled(rounds [][]time.Duration) []time.Duration {
	var out []time.Duration
	for _, r := range rounds {
		out = append(out, r...)
	}
	return out
}
