package replay

import (
	"slices"
	"sync"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/particle"
)

// Sizes of the read-ahead: each input is decoded up to readAheadBatches
// batches ahead of the merge. A batch has batchRecords/k records for k
// inputs, within [minBatchLen, maxBatchLen], so that merging many inputs
// does not hold many more records, and ends early once maxBatchBytes of
// the file were read for it, so that long records do not hold much more
// memory either.
const (
	readAheadBatches = 3
	batchRecords     = 1024
	minBatchLen      = 16
	maxBatchLen      = 256
	maxBatchBytes    = 256 << 10
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

// readAhead decodes one input in its own goroutine, a few batches of
// records ahead of the merge, so that decoding, the bulk of a replay's
// work, runs in parallel with pacing and emission. The batches circulate
// between the goroutine (empty) and the merge (full); it holds at most
// readAheadBatches of them, whatever the size of the input.
type readAhead struct {
	full  chan *[]record
	empty chan *[]record
	cur   *[]record
	next  int
}

// startReadAhead starts reading r. The goroutine ends at the end of r, or
// when stop is closed; wg tells when it has, after which r may be closed.
func startReadAhead(r *file.Reader, batchLen int, stop <-chan struct{}, wg *sync.WaitGroup) *readAhead {
	a := &readAhead{
		full:  make(chan *[]record, readAheadBatches),
		empty: make(chan *[]record, readAheadBatches),
	}
	for range readAheadBatches {
		b := make([]record, 0, batchLen)
		a.empty <- &b
	}
	wg.Go(func() { a.fill(r, stop) })
	return a
}

// fill decodes r into batches until the end of r or until stop is closed.
func (a *readAhead) fill(r *file.Reader, stop <-chan struct{}) {
	skipped := 0
	for {
		var b *[]record
		select {
		case b = <-a.empty:
		case <-stop:
			return
		}
		recs := (*b)[:0]
		end := false
		limit := r.Offset() + maxBatchBytes
		for len(recs) < cap(recs) && !end && r.Offset() < limit {
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
		*b = recs
		select {
		case a.full <- b:
		case <-stop:
			return
		}
		if end {
			return
		}
	}
}

// read returns the next record. After one whose error is not a
// *particle.DecodeError, it must not be called again. The record is valid
// until the next call.
func (a *readAhead) read() *record {
	if a.cur != nil && a.next == len(*a.cur) {
		a.empty <- a.cur
		a.cur = nil
	}
	if a.cur == nil {
		a.cur = <-a.full
		a.next = 0
	}
	rec := &(*a.cur)[a.next]
	a.next++
	return rec
}

// batchLen returns the records per batch for k inputs.
func batchLen(k int) int {
	return max(minBatchLen, min(maxBatchLen, batchRecords/k))
}

// readAll starts a readAhead on each reader. Calling the returned stop
// ends them all and waits for them, after which the readers may be
// closed.
func readAll(readers []*file.Reader) ([]*readAhead, func()) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	n := batchLen(len(readers))
	ras := make([]*readAhead, len(readers))
	for i, r := range readers {
		ras[i] = startReadAhead(r, n, stop, &wg)
	}
	return ras, func() {
		close(stop)
		wg.Wait()
	}
}
