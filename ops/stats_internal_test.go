package ops

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPercentileNearestRankIsExact(t *testing.T) {
	oneTo := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(i + 1)
		}
		return v
	}
	for _, tc := range []struct {
		p    float64
		n    int
		want float64
	}{
		{7, 100, 7},
		{14, 100, 14},
		{28, 100, 28},
		{57, 100, 57},
		{29, 100, 29},
		{50, 4, 2},
		{50, 5, 3},
		{100, 5, 5},
		{1, 3, 1},
		{99.9, 1000, 999},
		{0.1, 1000, 1},
		{33.3, 10, 4},
	} {
		assert.Equal(t, tc.want, percentile(oneTo(tc.n), tc.p), "p%v of 1..%d", tc.p, tc.n)
	}
}
