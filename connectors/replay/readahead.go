package replay

import (
	"bytes"
	"cmp"
	"io"
	"runtime"
	"slices"
	"sync"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/particle"
)

// Sizes of the read-ahead. A delimited input is decoded up to
// readAheadBatches batches ahead of the merge. A batch has batchRecords/k
// records for k inputs, within [minBatchLen, maxBatchLen], so that
// merging many inputs does not hold many more records, and ends early
// once maxBatchBytes of the file were read for it, so that long records
// do not hold much more memory either.
//
// A line-protocol input is cut into blocks of whole lines, of blockSize
// bytes or one longer line, decoded by blockWorkers(k) goroutines each,
// at most two blocks more than that ahead of the merge.
const (
	readAheadBatches = 3
	batchRecords     = 1024
	minBatchLen      = 16
	maxBatchLen      = 256
	maxBatchBytes    = 256 << 10
	blockSize        = 64 << 10
	maxBlockWorkers  = 4
	maxEmptyReads    = 100 // reads returning nothing before io.ErrNoProgress
)

// record is one entry read from an input: a particle, a malformed record,
// or the end of the input. The rare cases other than a particle keep
// their details out of line, so that a batch of particles stays compact.
type record struct {
	p particle.Particle
	// bad is nil for a particle.
	bad *badRecord
	// skipped counts the records the reader left out just before this one
	// (see file.Reader.Skipped).
	skipped int
}

// badRecord is a record that is not a particle.
type badRecord struct {
	// err is a *particle.DecodeError for a malformed record, io.EOF at the
	// end of the input, or the read error that ends it.
	err error
	// raw is the text of a malformed record.
	raw []byte
}

// batch is a run of records of one input, in the input's order.
type batch struct {
	recs []record
	// A block of line protocol: text holds whole lines, the first of them
	// line number line; err is io.EOF when the input ends after text, the
	// read error that cut it off there, or nil when more follows.
	text []byte
	line int
	err  error
	// done receives once recs is decoded, for a block; it is nil for a
	// batch that is decoded before it is handed over. Size one: the
	// decoder never waits for the merge.
	done chan struct{}
}

// readAhead decodes one input in goroutines of its own, a few batches of
// records ahead of the merge, so that decoding, the bulk of a replay's
// work, runs in parallel with pacing and emission. The batches circulate
// between the goroutines (empty) and the merge (full), in the input's
// order; their number is fixed, whatever the size of the input.
type readAhead struct {
	full  chan *batch
	empty chan *batch
	cur   *batch
	next  int
}

// newReadAhead returns a readAhead of n batches.
func newReadAhead(n int, newBatch func() *batch) *readAhead {
	a := &readAhead{full: make(chan *batch, n), empty: make(chan *batch, n)}
	for range n {
		a.empty <- newBatch()
	}
	return a
}

// input is one opened input: a Reader of its records or, for line
// protocol, its text, which is decoded in blocks.
type input struct {
	source string
	reader *file.Reader
	text   io.Reader
	dc     particle.DecoderConfig
	// whole says that reading text does not wait for a writer (a file,
	// not standard input): a block is read whole before it is decoded.
	whole bool
	// offset and size measure the progress through the file; nil for
	// standard input.
	offset func() int64
	size   int64
	close  func() error
}

// openInput opens in.
func openInput(in Input) (input, error) {
	if in.Format.Syntax != file.LineProtocol {
		var rd *file.Reader
		var err error
		if in.Reader != nil {
			rd, err = file.NewReader(in.Reader, in.Path, *in.Format)
		} else {
			rd, err = file.OpenReader(in.Path, *in.Format)
		}
		if err != nil {
			return input{}, err
		}
		return input{source: in.Path, reader: rd, offset: rd.Offset, size: rd.Size(), close: rd.Close}, nil
	}
	dc := particle.DecoderConfig{Precision: in.Format.Precision, MaxLineLength: in.Format.MaxLineLength}
	if err := dc.Validate(); err != nil {
		return input{}, err
	}
	if in.Reader != nil {
		return input{source: in.Path, text: in.Reader, dc: dc}, nil
	}
	s, err := file.OpenStream(in.Path)
	if err != nil {
		return input{}, err
	}
	return input{source: in.Path, text: s, dc: dc, whole: true, offset: s.Offset, size: s.Size(), close: s.Close}, nil
}

// Offset returns how many bytes of in's file were read so far.
func (in input) Offset() int64 {
	if in.offset == nil {
		return 0
	}
	return in.offset()
}

// Close closes in's file, if it has one.
func (in input) Close() error {
	if in.close == nil {
		return nil
	}
	return in.close()
}

// readAll starts a readAhead on each input. Calling the returned stop
// ends their goroutines and waits for them, after which the inputs may be
// closed.
func readAll(inputs []input) ([]*readAhead, func()) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	k := len(inputs)
	ras := make([]*readAhead, k)
	for i, in := range inputs {
		if in.reader != nil {
			ras[i] = startRecords(in.reader, batchLen(k), stop, &wg)
		} else {
			ras[i] = startBlocks(in, blockWorkers(k), blockSize, stop, &wg)
		}
	}
	return ras, func() {
		close(stop)
		wg.Wait()
	}
}

// batchLen returns the records per batch for k inputs.
func batchLen(k int) int {
	return max(minBatchLen, min(maxBatchLen, batchRecords/k))
}

// blockWorkers returns the goroutines that decode each of k line-protocol
// inputs: together about one per processor, since the inputs are decoded
// in parallel anyway.
func blockWorkers(k int) int {
	return max(1, min(maxBlockWorkers, runtime.GOMAXPROCS(0)/k))
}

// startRecords starts reading r record by record in a goroutine. It ends
// at the end of r, or when stop is closed; wg tells when it has.
func startRecords(r *file.Reader, batchLen int, stop <-chan struct{}, wg *sync.WaitGroup) *readAhead {
	a := newReadAhead(readAheadBatches, func() *batch { return &batch{recs: make([]record, 0, batchLen)} })
	wg.Go(func() { a.fill(r, batchLen, stop) })
	return a
}

// fill decodes r into batches until the end of r or until stop is closed.
func (a *readAhead) fill(r *file.Reader, batchLen int, stop <-chan struct{}) {
	skipped := 0
	for {
		b, ok := a.emptyBatch(stop)
		if !ok {
			return
		}
		recs := b.recs[:0]
		end := false
		limit := r.Offset() + maxBatchBytes
		for len(recs) < batchLen && !end && r.Offset() < limit {
			recs = recs[:len(recs)+1]
			rec := &recs[len(recs)-1]
			err := r.Read(&rec.p)
			n := r.Skipped()
			rec.skipped, skipped = n-skipped, n
			rec.bad = nil
			if err != nil {
				rec.bad = &badRecord{err: err}
				if isDecodeError(err) {
					rec.bad.raw = slices.Clone(r.Raw())
				} else {
					end = true
				}
			}
		}
		b.recs = recs
		if !hand(a.full, b, stop) || end {
			return
		}
	}
}

// startBlocks starts reading the line protocol of in in blocks of size
// bytes (or one longer line), in one goroutine, and decoding them in
// workers more. The blocks reach the
// merge in the input's order. Every goroutine ends at the end of the
// input, or when stop is closed; wg tells when they have.
func startBlocks(in input, workers, size int, stop <-chan struct{}, wg *sync.WaitGroup) *readAhead {
	n := workers + 2
	a := newReadAhead(n, func() *batch { return &batch{done: make(chan struct{}, 1)} })
	// The queue holds every batch, so that the reader never waits for a
	// worker while a batch is free.
	work := make(chan *batch, n)
	wg.Go(func() { a.split(in, size, work, stop) })
	for range workers {
		wg.Go(func() { decodeBlocks(in, work, stop) })
	}
	return a
}

// split reads in's text into blocks of whole lines, of size bytes or one
// longer line, and hands each to the workers and, in order, to the merge,
// until the end of the text or until stop is closed.
func (a *readAhead) split(in input, size int, work chan<- *batch, stop <-chan struct{}) {
	defer close(work)
	// A block holds whole lines: a line longer than the maximum is cut,
	// for the block's decoder to report, so that it is never held whole.
	r := particle.LimitLines(in.text, cmp.Or(in.dc.MaxLineLength, particle.DefaultMaxLineLength))
	var carry []byte // the start of a line, read with the block before
	line := 1
	for {
		b, ok := a.emptyBatch(stop)
		if !ok {
			return
		}
		text, err := readBlock(r, append(b.text[:0], carry...), size, in.whole)
		carry = carry[:0]
		if err == nil {
			cut := bytes.LastIndexByte(text, '\n') + 1
			carry = append(carry, text[cut:]...)
			text = text[:cut]
		}
		b.text, b.line, b.err = text, line, err
		line += bytes.Count(text, []byte{'\n'})
		if !hand(work, b, stop) || !hand(a.full, b, stop) || err != nil {
			return
		}
	}
}

// emptyBatch returns a free batch, or false once stop is closed.
func (a *readAhead) emptyBatch(stop <-chan struct{}) (*batch, bool) {
	select {
	case b := <-a.empty:
		return b, true
	case <-stop:
		return nil, false
	}
}

// hand sends b on c and reports true, or false once stop is closed.
func hand(c chan<- *batch, b *batch, stop <-chan struct{}) bool {
	select {
	case c <- b:
		return true
	case <-stop:
		return false
	}
}

// readBlock appends text read from r to text until it holds a line end
// and, if whole, size bytes, or until r ends (io.EOF) or fails. Read
// from a writer (whole false), a block ends with the first read that
// completes a line, so that a replay from a pipe keeps up with it.
func readBlock(r io.Reader, text []byte, size int, whole bool) ([]byte, error) {
	text = slices.Grow(text, max(0, size-len(text)))
	empty := 0
	for {
		if len(text) == cap(text) {
			// One line is longer than the block.
			text = slices.Grow(text, cap(text))
		}
		n, err := r.Read(text[len(text):cap(text)])
		text = text[:len(text)+n]
		switch {
		case err != nil:
			return text, err
		case n == 0:
			if empty++; empty == maxEmptyReads {
				return text, io.ErrNoProgress
			}
			continue
		}
		empty = 0
		switch {
		case !whole && bytes.IndexByte(text[len(text)-n:], '\n') >= 0:
			// The reads before held no line end, or the block would
			// have ended.
			return text, nil
		case len(text) == cap(text) && bytes.LastIndexByte(text, '\n') >= 0:
			return text, nil
		}
	}
}

// decodeBlocks decodes the blocks of in that come through work until the
// reader closes it or stop is closed. Each worker has its own Decoder,
// whose intern table lasts from block to block.
func decodeBlocks(in input, work <-chan *batch, stop <-chan struct{}) {
	// openInput validated the configuration.
	d, _ := particle.NewDecoderBytes(nil, in.source, in.dc)
	for b := range work {
		select {
		case <-stop:
			return
		default:
		}
		b.recs = decodeBlock(d, in.source, b)
		b.done <- struct{}{}
	}
}

// decodeBlock decodes b.text with d, as file.Reader decodes line protocol:
// the records of a block are those the Reader returns for its lines.
func decodeBlock(d *particle.Decoder, source string, b *batch) []record {
	if b.err == nil || b.err == io.EOF {
		d.ResetBytes(b.text, source)
	} else {
		// The read error follows the text, as it did in the input.
		d.Reset(io.MultiReader(bytes.NewReader(b.text), errReader{b.err}), source)
	}
	d.SetStartLine(b.line)
	recs := b.recs[:0]
	for {
		recs = append(recs, record{})
		rec := &recs[len(recs)-1]
		err := d.Decode(&rec.p)
		switch {
		case err == nil:
			continue
		case isDecodeError(err):
			rec.bad = &badRecord{err: err, raw: slices.Clone(d.Raw())}
			continue
		case err != io.EOF:
			rec.bad = &badRecord{err: &file.ReadError{Source: source, Line: d.Line(), Err: err}}
		case b.err == io.EOF:
			rec.bad = &badRecord{err: io.EOF}
		default:
			// The end of a block that the input goes on after.
			recs = recs[:len(recs)-1]
		}
		return recs
	}
}

// errReader fails every read with err.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// read returns the next record. After one whose error is not a
// *particle.DecodeError, it must not be called again. The record is valid
// until the next call.
func (a *readAhead) read() *record {
	for a.cur == nil || a.next == len(a.cur.recs) {
		if a.cur != nil {
			a.empty <- a.cur
		}
		a.cur = <-a.full
		if a.cur.done != nil {
			<-a.cur.done
		}
		a.next = 0
	}
	rec := &a.cur.recs[a.next]
	a.next++
	return rec
}
