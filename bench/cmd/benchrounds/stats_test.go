package main

import (
	"math"
	"testing"
)

func TestUCDF(t *testing.T) {
	// Known values of the Mann-Whitney U distribution.
	for _, tc := range []struct {
		m, n, u int
		p       float64
	}{
		{3, 3, 0, 1.0 / 20},
		{6, 6, 5, 0.0206},
		{6, 6, 6, 0.0325},
		{8, 8, 13, 0.0249},
	} {
		if got := uCDF(tc.m, tc.n)[tc.u]; math.Abs(got-tc.p) > 0.00051 {
			t.Errorf("P(U <= %d | %d, %d) = %.4f, want %.4f", tc.u, tc.m, tc.n, got, tc.p)
		}
	}
	c := uCDF(5, 7)
	if c[len(c)-1] != 1 {
		t.Errorf("cdf ends at %v", c[len(c)-1])
	}
}

func TestRatioCI(t *testing.T) {
	a := []float64{10, 11, 9, 10.5, 9.5, 10}
	b := []float64{20, 22, 18, 21, 19, 20}
	est, lo, hi, level := ratioCI(a, b, 0.95)
	if math.Abs(est-2) > 0.01 || lo > 2 || hi < 2 || lo < 1.6 || hi > 2.5 {
		t.Errorf("ratio %.3f [%.3f, %.3f], want about 2", est, lo, hi)
	}
	if math.Abs(level-0.959) > 0.001 {
		t.Errorf("level %.4f, want 0.959", level)
	}
	// Identical samples: the interval holds 1.
	_, lo, hi, _ = ratioCI(a, a, 0.95)
	if lo > 1 || hi < 1 {
		t.Errorf("a vs a: [%.3f, %.3f] misses 1", lo, hi)
	}
	// Three and three cannot reach 0.95: the widest interval, at 0.90.
	_, lo, hi, level = ratioCI([]float64{1, 2, 3}, []float64{4, 5, 6}, 0.95)
	if math.Abs(lo-4.0/3) > 1e-9 || math.Abs(hi-6) > 1e-9 || math.Abs(level-0.9) > 1e-9 {
		t.Errorf("3 vs 3: [%v, %v] at %v", lo, hi, level)
	}
}

func TestMedianCI(t *testing.T) {
	values := []float64{12, 3, 7, 1, 9, 5, 11, 2, 8, 4, 10, 6} // 1..12, shuffled
	est, lo, hi, level := medianCI(values, 0.95)
	// n = 12: P(B <= 2) = 79/4096 = 0.0193, P(B <= 3) = 0.0730, so k = 3:
	// the 3rd and the 10th values, at 1 - 2 x 0.0193.
	if est != 6.5 || lo != 3 || hi != 10 || math.Abs(level-(1-2*79.0/4096)) > 1e-12 {
		t.Errorf("12 values: %v [%v, %v] at %v, want 6.5 [3, 10] at 0.961", est, lo, hi, level)
	}
	// n = 6: only k = 1 reaches 0.95 (P(B = 0) = 1/64): the extremes.
	est, lo, hi, level = medianCI([]float64{4, 1, 6, 2, 5, 3}, 0.95)
	if est != 3.5 || lo != 1 || hi != 6 || math.Abs(level-(1-2.0/64)) > 1e-12 {
		t.Errorf("6 values: %v [%v, %v] at %v, want 3.5 [1, 6] at 0.969", est, lo, hi, level)
	}
	// n = 4 cannot reach 0.95: the extremes, at the level they have.
	_, lo, hi, level = medianCI([]float64{1, 2, 3, 4}, 0.95)
	if lo != 1 || hi != 4 || math.Abs(level-(1-2.0/16)) > 1e-12 {
		t.Errorf("4 values: [%v, %v] at %v, want [1, 4] at 0.875", lo, hi, level)
	}
	// The input is left as it was.
	if values[0] != 12 {
		t.Errorf("medianCI sorted its input")
	}
}
