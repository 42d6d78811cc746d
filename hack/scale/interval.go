package main

import (
	"math/rand/v2"
	"sort"
	"time"
)

// ratioInterval is the 95 % interval of a ratio of medians, kubectl-llm's (b) over LWS alone's
// (a), by a bootstrap over pairs of rounds: round i of a and round i of b ran one after the other
// (the sides alternate A B B A…), and each resample draws as many pairs as there are, with
// replacement, pools each side's durations of the pairs drawn and takes the ratio of the pooled
// medians. Rounds, not single cases, are drawn because the cluster's state drifts between rounds
// (a side's round medians differ by a fifth) and the cases of one round share it: an interval
// over cases alone would be too narrow. They are drawn in pairs because two rounds run one after
// the other share much of that drift (over 32 idle rounds a side the two sides' round medians
// correlate by 0.58 and 0.64, session 37): drawn apart, a resample could put one side's slow
// rounds against the other's fast ones, which no run measured. A side with fewer rounds than the other is padded
// with empty rounds. ok is false when a side has fewer than three rounds with a duration: too
// few to say anything about the spread between rounds.
func ratioInterval(a, b [][]time.Duration, resamples int, rng *rand.Rand) (lo, hi float64, ok bool) {
	a, b = pairedRounds(a, b)
	if countNonEmpty(a) < 3 || countNonEmpty(b) < 3 || resamples < 1 {
		return 0, 0, false
	}
	ratios := make([]float64, 0, resamples)
	var pa, pb []time.Duration
	for range resamples {
		pa, pb = pa[:0], pb[:0]
		for range a {
			i := rng.IntN(len(a))
			pa, pb = append(pa, a[i]...), append(pb, b[i]...)
		}
		if len(pa) == 0 || len(pb) == 0 {
			continue
		}
		ma, mb := quantile(pa, 0.5), quantile(pb, 0.5)
		if ma <= 0 {
			continue
		}
		ratios = append(ratios, float64(mb)/float64(ma))
	}
	if len(ratios) == 0 {
		return 0, 0, false
	}
	sort.Float64s(ratios)
	at := func(p float64) float64 { return ratios[int(p*float64(len(ratios)-1)+0.5)] }
	return at(0.025), at(0.975), true
}

// pairedRounds is a and b padded to one length with empty rounds, without the pairs empty on
// both sides (a case no round of either side measured there).
func pairedRounds(a, b [][]time.Duration) (pa, pb [][]time.Duration) {
	for i := range max(len(a), len(b)) {
		var ra, rb []time.Duration
		if i < len(a) {
			ra = a[i]
		}
		if i < len(b) {
			rb = b[i]
		}
		if len(ra) == 0 && len(rb) == 0 {
			continue
		}
		pa, pb = append(pa, ra), append(pb, rb)
	}
	return pa, pb
}

func countNonEmpty(rounds [][]time.Duration) int {
	n := 0
	for _, r := range rounds {
		if len(r) > 0 {
			n++
		}
	}
	return n
}

// intervalResamples is how many resamples an interval of the table takes.
const intervalResamples = 2000

// perRound is f of each round.
func perRound(rounds []*results, f func(*results) []time.Duration) [][]time.Duration {
	out := make([][]time.Duration, len(rounds))
	for i, r := range rounds {
		out[i] = f(r)
	}
	return out
}

// intervalRNG is the generator of one interval, seeded the same for every interval: an interval
// depends on its durations alone, not on the rows printed before it, so a run's table, the same
// run's -pool and any table printed again from the same rounds give the same interval.
func intervalRNG() *rand.Rand { return rand.New(rand.NewPCG(16, 105)) }
