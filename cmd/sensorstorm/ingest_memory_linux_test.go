package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/httpwrite"
)

// gzipBody returns a gzip body of readings a millisecond apart whose
// lines make at least size bytes, and the number of lines.
func gzipBody(t *testing.T, size int) ([]byte, int) {
	t.Helper()
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	require.NoError(t, err)
	note := strings.Repeat("x", 60)
	n := 0
	for inflated := 0; inflated < size; n++ {
		k, err := fmt.Fprintf(zw, "reading,sensor=s1,site=library-west-wing v=%di,note=\"%s\" %d\n", n, note, 1700000000000000000+int64(n)*1e6)
		require.NoError(t, err)
		inflated += k
	}
	require.NoError(t, zw.Close())
	return b.Bytes(), n
}

// TestIngestHTTPWriteGzipMemory posts seven gzip bodies that inflate to
// 31 MiB each, in parallel, to ingest --http-write, and a
// body that inflates beyond --http-max-body: the seven are written, the
// last refused 413 naming the limit, and the process's peak resident
// memory stays within the in-flight bound (httpwrite's
// DefaultMaxInFlightBytes), which their inflated bytes count against
// while they are decoded, and a margin for the rest of the process.
func TestIngestHTTPWriteGzipMemory(t *testing.T) {
	const parallel = 7
	const bound = httpwrite.DefaultMaxInFlightBytes
	bin := buildBinary(t)
	dir := t.TempDir()
	addr, page := freeAddr(t), freeAddr(t)
	// What is measured is what the process holds, not how far garbage
	// outruns a collector starved of CPU on a busy machine (seen: 268 MiB
	// at a load of 5, and 258 MiB with a soft limit of 192 MiB while the
	// rest of the suite ran beside two busy loops; 56 to 70 MiB on a quiet
	// machine): a soft limit well under the bound makes the collector keep
	// up, as a deployment with a memory limit would set it.
	t.Setenv("GOMEMLIMIT", "128MiB")
	cmd, stderr := startIngestUntil(t, bin, "httpwrite: listening", "--http-write", addr, "--http-addr", page,
		"--state-dir", filepath.Join(dir, "state"), "--out", "/dev/null", "--window", "0")

	body, lines := gzipBody(t, 31<<20)
	big, _ := gzipBody(t, httpwrite.DefaultMaxBodySize+1<<20)
	t.Logf("a body of %d bytes gzipped, %d lines, 31 MiB inflated", len(body), lines)

	// A connection of its own per request: the seven are received in
	// parallel.
	client := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{DisableKeepAlives: true}}
	post := func(b []byte) (int, string) {
		req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/api/v2/write?bucket=b", bytes.NewReader(b))
		require.NoError(t, err)
		req.Header.Set("Content-Encoding", "gzip")
		res, err := client.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		msg, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, string(msg)
	}
	var wg sync.WaitGroup
	codes := make([]int, parallel)
	for i := range parallel {
		wg.Go(func() { codes[i], _ = post(body) })
	}
	wg.Wait()
	for i, c := range codes {
		assert.Equal(t, http.StatusNoContent, c, "body %d", i)
	}
	waitUntil(t, time.Minute, "every line written and acknowledged", func() bool {
		return metricValues(t, "http://"+page+"/metrics", "sensorstorm_acked_total")["http"] == uint64(parallel*lines)
	})
	// With nothing in flight, so that the bound does not refuse it first.
	code, msg := post(big)
	assert.Equal(t, http.StatusRequestEntityTooLarge, code, msg)
	assert.Contains(t, msg, fmt.Sprintf("limit of %d bytes (max_body_size) after decompression", httpwrite.DefaultMaxBodySize))
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait(), stderr.String())
	peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB on Linux
	t.Logf("peak RSS %d MiB, bound %d MiB", peak>>20, bound>>20)
	// The bound is of the bodies in flight; the rest of the process (the
	// runtime, the spool's buffers, the pipeline) and the garbage a
	// starved collector leaves get 64 MiB more (seen: 265 MiB at a load
	// of 10). Inflating the bodies whole would hold 217 MiB of them alone
	// besides their copies.
	assert.Less(t, peak, int64(bound+64<<20), "peak resident memory with %d bodies of 31 MiB inflated in parallel", parallel)
}
