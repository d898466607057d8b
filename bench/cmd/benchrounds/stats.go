package main

import (
	"math"
	"slices"
)

// ratioCI estimates how many times larger b's values are than a's, with a
// distribution-free confidence interval: the Hodges-Lehmann estimate and
// interval of the shift between log(b) and log(a), which is the interval that
// goes with the Mann-Whitney U test benchstat uses for its p-values. level is
// the interval's actual confidence: the U distribution is discrete, so it is
// the smallest level the sample sizes allow at or above the wanted one (0.959
// for 6 and 6 samples and 0.95 wanted), or the widest interval's level when
// there are too few samples to reach it.
//
// All values must be positive.
func ratioCI(a, b []float64, want float64) (est, lo, hi, level float64) {
	m, n := len(a), len(b)
	if m == 0 || n == 0 {
		return math.NaN(), math.NaN(), math.NaN(), 0
	}
	d := make([]float64, 0, m*n)
	for _, x := range a {
		for _, y := range b {
			d = append(d, math.Log(y)-math.Log(x))
		}
	}
	slices.Sort(d)
	est = math.Exp(median(d))
	// The true ratio lies below the k-th smallest difference (1-based) with
	// probability P(U <= k-1), and above the k-th largest with the same
	// probability: take the largest k for which that is at most (1-want)/2.
	cdf := uCDF(m, n)
	alpha := (1 - want) / 2
	k := 0
	for k < len(cdf) && cdf[k] <= alpha {
		k++
	}
	if k == 0 {
		// Too few samples for the wanted level: the widest interval, at the
		// level it has.
		return est, math.Exp(d[0]), math.Exp(d[len(d)-1]), 1 - 2*cdf[0]
	}
	lo = math.Exp(d[k-1])
	hi = math.Exp(d[len(d)-k])
	return est, lo, hi, 1 - 2*cdf[k-1]
}

func median(s []float64) float64 {
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// uCDF returns P(U <= u) for u = 0..m*n, where U is the Mann-Whitney
// statistic of samples of sizes m and n with no ties, under the null
// hypothesis.
func uCDF(m, n int) []float64 {
	// f[i][j][u]: the number of orderings of i a's and j b's with U = u.
	f := make([][][]float64, m+1)
	for i := range f {
		f[i] = make([][]float64, n+1)
		for j := range f[i] {
			f[i][j] = make([]float64, i*j+1)
			switch {
			case i == 0 || j == 0:
				f[i][j][0] = 1
			default:
				for u := range f[i][j] {
					// The largest value is an a (it beats all j b's) or a b.
					if u-j >= 0 && u-j < len(f[i-1][j]) {
						f[i][j][u] += f[i-1][j][u-j]
					}
					if u < len(f[i][j-1]) {
						f[i][j][u] += f[i][j-1][u]
					}
				}
			}
		}
	}
	counts := f[m][n]
	var total float64
	for _, c := range counts {
		total += c
	}
	cdf := make([]float64, len(counts))
	var acc float64
	for u, c := range counts {
		acc += c
		cdf[u] = acc / total
	}
	return cdf
}

// medianCI returns the median of values with a distribution-free confidence
// interval for the median of the distribution they were drawn from: the
// order statistics x(k) and x(n+1-k) (1-based, ascending), where k is the
// largest for which P(B < k) is at most (1-want)/2, B being the number of
// values below the median, binomial (n, 1/2). That is the interval of the
// sign test; it assumes only that the values are independent. level is the
// interval's actual confidence (0.961 for 12 values and 0.95 wanted), or the
// widest interval's level when there are too few values to reach want.
func medianCI(values []float64, want float64) (est, lo, hi, level float64) {
	n := len(values)
	if n == 0 {
		return math.NaN(), math.NaN(), math.NaN(), 0
	}
	x := slices.Sorted(slices.Values(values))
	est = median(x)
	// below[j] = P(B <= j).
	below := make([]float64, n+1)
	p, acc := math.Pow(0.5, float64(n)), 0.0 // P(B = 0)
	for j := 0; j <= n; j++ {
		acc += p
		below[j] = acc
		p = p * float64(n-j) / float64(j+1)
	}
	alpha := (1 - want) / 2
	k := 0
	for k < n/2 && below[k] <= alpha {
		k++
	}
	if k == 0 {
		return est, x[0], x[n-1], 1 - 2*below[0]
	}
	return est, x[k-1], x[n-k], 1 - 2*below[k-1]
}
