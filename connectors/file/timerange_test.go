package file_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/file"
)

func TestTimeRange(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(data), 0o644))
		return path
	}
	var long strings.Builder
	long.WriteString("# a comment\nbad line\n")
	for i := range 20000 { // about 400 KB: the middle is never read
		fmt.Fprintf(&long, "m,node=%d v=%d %d\n", i%5, i, 1000+i)
	}
	long.WriteString("m v=1 15000\nbroken")
	csv := "time,v\n" + strings.Repeat("x,1\n", 3) + "5,1\n6,2\n9,3\n"
	for _, tc := range []struct {
		name, data  string
		format      file.Format
		first, last int64
		err         error
	}{
		{"long.lp", long.String(), file.Format{}, 1000, 1000 + 19999, nil},
		{"short.lp", "m v=1 7\nm v=2 5\n", file.Format{}, 7, 7, nil},
		{"data.csv", csv, file.Detect("data.csv"), 5e9, 9e9, nil},
		{"empty.lp", "", file.Format{}, 0, 0, file.ErrNoTimeRange},
		{"data.lp.gz", "m v=1 1\n", file.Format{}, 0, 0, file.ErrNoTimeRange},
	} {
		first, last, err := file.TimeRange(write(tc.name, tc.data), tc.format)
		if tc.err != nil {
			assert.ErrorIs(t, err, tc.err, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		assert.Equal(t, [2]int64{tc.first, tc.last}, [2]int64{first, last}, tc.name)
	}
}
