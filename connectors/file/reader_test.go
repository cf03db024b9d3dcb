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
