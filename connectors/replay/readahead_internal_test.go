package replay

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/particle"
)

// drain reads a to its end and renders each record: a particle (without
// its sequence number, which the topology replaces), or its error and
// raw text.
func drain(a *readAhead) []string {
	var out []string
	for {
		rec := a.read()
		if rec.bad == nil {
			p := rec.p
			p.Seq = 0
			out = append(out, fmt.Sprintf("%+v", p))
			continue
		}
		out = append(out, fmt.Sprintf("%v %q", rec.bad.err, rec.bad.raw))
		if !isDecodeError(rec.bad.err) {
			return out
		}
	}
}

// records returns what a file.Reader makes of the text of r, record by
// record: the reference for the blocks.
func records(t *testing.T, r io.Reader, dc particle.DecoderConfig) []string {
	rd, err := file.NewReader(r, "in.lp", file.Format{Precision: dc.Precision, MaxLineLength: dc.MaxLineLength})
	require.NoError(t, err)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(stop)
	return drain(startRecords(rd, 7, stop, &wg))
}

// blocks returns what decoding the text of r in blocks of size bytes
// makes of it.
func blocks(r io.Reader, dc particle.DecoderConfig, size, workers int, whole bool) []string {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(stop)
	in := input{source: "in.lp", text: r, dc: dc, whole: whole}
	return drain(startBlocks(in, workers, size, stop, &wg))
}

// checkBlocks requires that decoding text in blocks, from several readers,
// in blocks of several sizes and with several workers, yields the records
// that a file.Reader yields, the positions of errors included.
func checkBlocks(t *testing.T, text []byte, dc particle.DecoderConfig) {
	t.Helper()
	broken := errors.New("broken")
	readers := []struct {
		name  string
		new   func() io.Reader
		whole bool
	}{
		{"file", func() io.Reader { return bytes.NewReader(text) }, true},
		{"pipe", func() io.Reader { return iotest.HalfReader(bytes.NewReader(text)) }, false},
		{"bytewise", func() io.Reader { return iotest.OneByteReader(bytes.NewReader(text)) }, false},
		{"read error", func() io.Reader {
			return iotest.HalfReader(io.MultiReader(bytes.NewReader(text), iotest.ErrReader(broken)))
		}, true},
		{"no progress", func() io.Reader { return io.MultiReader(bytes.NewReader(text), emptyReader{}) }, true},
	}
	for _, r := range readers {
		want := records(t, r.new(), dc)
		for _, size := range []int{1, 10, 100, blockSize} {
			for _, workers := range []int{1, 3} {
				got := blocks(r.new(), dc, size, workers, r.whole)
				require.Equal(t, want, got, "%s, blocks of %d bytes, %d workers, text %q", r.name, size, workers, text)
			}
		}
	}
}

// emptyReader returns nothing, forever.
type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, nil }

func TestBlocksMatchRecords(t *testing.T) {
	long := strings.Repeat("x", 70<<10)
	for _, text := range []string{
		"",
		"\n\n",
		"m f=1 1\n",
		"m f=1 1\nm f=2 2",
		"m,t=a f=1 1\r\nm f=x 2\n\n# comment\nm s=\"open\nm f=3 3\nm,a=1,a=2 f=1 4\n  m f=5 5\nm f=6 99999999999999999999\n",
		"m s=\"" + long + "\" 1\nm f=2 2\n" + long + " f=3 3\nm f=4 4\n",
		"m f=1 1\nm f=2 2\nm f=3 3\nm f=4",
		"\xef\xbb\xbfm f=1 1\n\xef\xbb\xbfm f=2 2\n",
	} {
		checkBlocks(t, []byte(text), particle.DecoderConfig{})
	}
	checkBlocks(t, []byte("m f=1 1\nm f=2 9223372036854775807\nm f=3 3\n"), particle.DecoderConfig{Precision: particle.Second})
	// Lines longer than the maximum, among them the last.
	checkBlocks(t, []byte("m f=1 1\nm s=\""+long[:100]+"\" 2\nm f=3 3\nm f=4 "+long[:50]), particle.DecoderConfig{MaxLineLength: 20})
}

// FuzzBlocks checks that line protocol decoded in blocks, in parallel,
// yields the records of a file.Reader, in their order and with the
// positions of their errors.
func FuzzBlocks(f *testing.F) {
	f.Add([]byte("m,t=a f=1 1\r\nm f=x 2\n\n# comment\nm s=\"open\nm f=3 3\n"), uint8(0))
	f.Add([]byte("m f=1 1\nm f=2 2\nm f=3 3\nm f=4"), uint8(2))
	f.Fuzz(func(t *testing.T, text []byte, prec uint8) {
		checkBlocks(t, text, particle.DecoderConfig{Precision: particle.Precision(prec % 4), MaxLineLength: 16 + int(prec)})
	})
}

// BenchmarkBlocks decodes 200k lines of line protocol in blocks, on one
// goroutine and on two, in each iteration, and reports the rate on two
// and "speedup", the ratio of the two rates, measured under the same
// machine load.
func BenchmarkBlocks(b *testing.B) {
	var text bytes.Buffer
	for i := range 200_000 {
		fmt.Fprintf(&text, "wsn,node=%d seq=%di,temperature=%d.%d,humidity=51.5 %d\n", i%10, i, 20+i%5, i%10, 1e18+int64(i)*1e6)
	}
	b.SetBytes(int64(text.Len()))
	b.ReportAllocs()
	var one, two time.Duration
	for b.Loop() {
		for _, workers := range []int{1, 2} {
			start := time.Now()
			stop := make(chan struct{})
			var wg sync.WaitGroup
			a := startBlocks(input{source: "bench", text: bytes.NewReader(text.Bytes()), whole: true}, workers, blockSize, stop, &wg)
			n := 0
			for rec := a.read(); rec.bad == nil; rec = a.read() {
				n++
			}
			close(stop)
			wg.Wait()
			if n != 200_000 {
				b.Fatalf("decoded %d records, want 200000", n)
			}
			if workers == 1 {
				one += time.Since(start)
			} else {
				two += time.Since(start)
			}
		}
	}
	b.ReportMetric(float64(b.N)*200_000/two.Seconds(), "particles/s")
	b.ReportMetric(one.Seconds()/two.Seconds(), "speedup")
}
