package file_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/particle"
)

// TestTruncatedGzipNamesFileAndLine cuts a gzip recording in the middle
// of its 1000 lines: the error names the file and the line where the
// input broke off, after the lines read before it.
func TestTruncatedGzipNamesFileAndLine(t *testing.T) {
	var plain bytes.Buffer
	for i := range 1000 {
		fmt.Fprintf(&plain, "m,node=%d v=%d %d\n", i%7, i, i)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, err := zw.Write(plain.Bytes())
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	path := filepath.Join(t.TempDir(), "cut.lp.gz")
	require.NoError(t, os.WriteFile(path, gz.Bytes()[:gz.Len()/2], 0o600))

	r, err := file.OpenReader(path, file.Format{})
	require.NoError(t, err)
	defer r.Close()
	var p particle.Particle
	n := 0
	for err = r.Read(&p); err == nil; err = r.Read(&p) {
		n++
	}
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Contains(t, err.Error(), path)
	assert.Contains(t, err.Error(), fmt.Sprintf("line %d:", r.Line()))
	assert.Greater(t, n, 0)
	assert.GreaterOrEqual(t, r.Line(), n+1)
}

func TestRawLineProtocol(t *testing.T) {
	in := "m v=1 1\nm v=\"open 2\nm v=3 3\n"
	r, err := file.NewReader(strings.NewReader(in), "in.lp", file.Format{})
	require.NoError(t, err)
	var p particle.Particle
	var raws []string
	var errs int
	for {
		err := r.Read(&p)
		if err == io.EOF {
			break
		}
		var de *particle.DecodeError
		if errors.As(err, &de) {
			errs++
		}
		raws = append(raws, string(r.Raw()))
	}
	assert.Equal(t, []string{"m v=1 1", `m v="open 2`, "m v=3 3"}, raws)
	assert.Equal(t, 1, errs)
}

// TestLongLinesAndByteOrderMark reads files that start with a byte order
// mark and have a line longer than the maximum, in both syntaxes: the
// mark is no part of the first line, and the long line is one malformed
// record, named by file and line, with its prefix as raw text, after
// which reading goes on.
func TestLongLinesAndByteOrderMark(t *testing.T) {
	const bom, limit = "\xef\xbb\xbf", 64
	long := strings.Repeat("x", 10*limit)
	for _, tc := range []struct {
		name   string
		format file.Format
		input  string
		want   []string
	}{
		{
			name:   "line protocol",
			format: file.Format{Precision: particle.Second, MaxLineLength: limit},
			input:  bom + "m v=1 1\nm s=\"" + long + "\" 2\nm v=3 3\n",
			want:   []string{"m v=1 1", "line 2: " + `m s="` + long[:limit-4], "m v=3 3"},
		},
		{
			name:   "delimited with a header",
			format: file.Format{Syntax: file.Delimited, MaxLineLength: limit, Delimited: file.DelimitedConfig{Header: true, Measurement: "m", Time: file.TimeConfig{Layout: "s"}}},
			input:  bom + "time,v\n1,1\n2," + long + "\n3,3\n",
			want:   []string{"m v=1 1", "line 3: 2," + long[:limit-1], "m v=3 3"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := file.NewReader(strings.NewReader(tc.input), "in", tc.format)
			require.NoError(t, err)
			var got []string
			var p particle.Particle
			for err = r.Read(&p); err != io.EOF; err = r.Read(&p) {
				if err != nil {
					require.ErrorIs(t, err, particle.ErrLineTooLong)
					require.ErrorContains(t, err, fmt.Sprintf("in:%d:%d:", r.Line(), limit+1))
					got = append(got, fmt.Sprintf("line %d: %s", r.Line(), r.Raw()))
					continue
				}
				b, err := particle.AppendLineProtocol(nil, &p, particle.Second)
				require.NoError(t, err)
				got = append(got, strings.TrimSuffix(string(b), "\n"))
			}
			assert.Equal(t, tc.want, got)
		})
	}
}
