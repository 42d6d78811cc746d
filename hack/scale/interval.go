package main

import (
	"math/rand/v2"
	"sort"
	"time"
)

// ratioInterval is the 95 % interval of a ratio of medians, kubectl-llm's (b) over LWS alone's
// (a), by a bootstrap over rounds: each resample draws as many rounds of each side as it has,
// with replacement, pools their durations and takes the ratio of the pooled medians. Rounds, not
// single cases, are drawn because the cluster's state drifts between rounds (a side's round
// medians differ by a fifth), and the cases of one round share it: an interval over cases alone
// would be too narrow. ok is false when a side has fewer than three rounds with a duration: too
// few to say anything about the spread between rounds.
func ratioInterval(a, b [][]time.Duration, resamples int, rng *rand.Rand) (lo, hi float64, ok bool) {
	a, b = nonEmpty(a), nonEmpty(b)
	if len(a) < 3 || len(b) < 3 || resamples < 1 {
		return 0, 0, false
	}
	ratios := make([]float64, 0, resamples)
	for range resamples {
		ma, mb := resampledMedian(a, rng), resampledMedian(b, rng)
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

// resampledMedian draws len(rounds) rounds with replacement and gives the median of their
// durations pooled.
func resampledMedian(rounds [][]time.Duration, rng *rand.Rand) time.Duration {
	var pooled []time.Duration
	for range rounds {
		pooled = append(pooled, rounds[rng.IntN(len(rounds))]...)
	}
	return quantile(pooled, 0.5)
}

func nonEmpty(rounds [][]time.Duration) [][]time.Duration {
	var out [][]time.Duration
	for _, r := range rounds {
		if len(r) > 0 {
			out = append(out, r)
		}
	}
	return out
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
