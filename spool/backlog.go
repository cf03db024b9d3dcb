package spool

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"
)

// Defaults for BacklogConfig.
const (
	DefaultMemoryRecords = 4096
	DefaultMemoryBytes   = 64 << 20
	DefaultReadBatch     = 256
	// DefaultMinFree is the most free space a backlog leaves to the
	// system by default; on a file system smaller than twenty times it,
	// a twentieth of its size.
	DefaultMinFree = 1 << 30
)

// BacklogConfig bounds a Backlog: the part held in memory, and the whole
// of it on disk. The zero BacklogConfig is valid.
type BacklogConfig struct {
	// MemoryRecords and MemoryBytes bound the records kept in memory for
	// the reader; the others are read back from the spool's files.
	// Default to DefaultMemoryRecords and DefaultMemoryBytes.
	MemoryRecords int   `yaml:"-"`
	MemoryBytes   int64 `yaml:"-"`
	// ReadBatch is how many records Next reads from disk at most at once.
	// Defaults to DefaultReadBatch.
	ReadBatch int `yaml:"-"`
	// MaxBytes is the disk quota: the bytes of records waiting at which
	// Full reports true, so that the writer stops taking input. Defaults
	// to half the space free on the spool's file system when the backlog
	// is made.
	MaxBytes int64 `yaml:"max_backlog_bytes"`
	// MinFree is the free space on the spool's file system below which
	// Full reports true whatever the backlog. Defaults to DefaultMinFree,
	// or a twentieth of a smaller file system's size.
	MinFree int64 `yaml:"min_free_bytes"`
	// Name says whose backlog it is in log lines, such as "mqtt".
	Name string `yaml:"-"`
	// Logger receives the backlog's growth, its draining and the quota
	// reached. Defaults to discarding them.
	Logger *slog.Logger `yaml:"-"`
	// Now is the wall clock, for the age of what waits and the rates.
	// Defaults to time.Now.
	Now func() time.Time `yaml:"-"`
}

func (c *BacklogConfig) setDefaults(dir string) error {
	if c.MemoryRecords <= 0 {
		c.MemoryRecords = DefaultMemoryRecords
	}
	if c.MemoryBytes <= 0 {
		c.MemoryBytes = DefaultMemoryBytes
	}
	if c.ReadBatch <= 0 {
		c.ReadBatch = DefaultReadBatch
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.MaxBytes > 0 && c.MinFree > 0 {
		return nil
	}
	free, total, err := diskSpace(dir)
	if err != nil {
		return err
	}
	if c.MinFree <= 0 {
		c.MinFree = min(DefaultMinFree, total/20)
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = max(free/2, 1)
	}
	return nil
}

// BacklogStats describes what waits in a Backlog.
type BacklogStats struct {
	// Records and Bytes count the records added (or found by Open) and
	// not yet handed out, and their bytes in the spool.
	Records, Bytes int64
	// Oldest is the receive time of the oldest of them, in nanoseconds
	// since the Unix epoch (to the second for those on disk); 0 when
	// none waits.
	Oldest int64
	// OnDisk counts those held on disk only; ReadBack the records read
	// back from disk so far.
	OnDisk   int64
	ReadBack uint64
	// Full reports that the quota is reached: the writer takes no input
	// until the reader makes room.
	Full bool
	// DrainRate and AddRate are the records handed out and added per
	// second over the last few seconds; CatchUp estimates when the
	// reader catches up at these rates, 0 when nothing waits or the
	// backlog does not shrink.
	DrainRate, AddRate float64
	CatchUp            time.Duration
}

// Backlog hands the records of a Spool of Records to one reader, in
// sequence order, at the reader's pace, however far behind the writer it
// is. The writer appends and syncs as before, then Adds each record with
// what the reader will want of it, an item of type T. The newest items are
// kept in memory while they fit in BacklogConfig; past that, a record is
// held on disk only and Next reads it back with decode when the reader
// gets to it, so that memory stays bounded whatever the backlog. Records a
// previous process left not completed come first, read back from disk.
//
// Items with sequence number 0 (not spooled, such as inputs rejected
// before the spool) are always kept in memory; the reader gets them with
// the others, not necessarily in their place.
//
// What it is not: a queue for several readers, or one that forgets: a
// record stays in the spool until the reader Completes it.
type Backlog[T any] struct {
	sp     *Spool
	cfg    BacklogConfig
	decode func(seq uint64, r Record) (T, error)
	wake   chan struct{} // something was added; size one: one wake-up is enough
	room   chan struct{} // something was handed out; likewise
	cur    *cursor       // the reader's
	// sources interns the sources of the records read back, for the
	// reader alone: inputs come from a few topics or paths, and a string
	// made per record would be an allocation per record.
	sources map[string]string

	mu       sync.Mutex // guards what follows
	mem      []memItem[T]
	memBytes int64
	// [diskFrom, diskTo) are the records held on disk only, with marks
	// of their receive times; empty when diskFrom == diskTo.
	diskFrom, diskTo uint64
	marks            []mark
	stats            BacklogStats
	added, handed    uint64
	samples          [rateSamples]sample
	sampled          int // samples taken, the newest at samples[(sampled-1)%rateSamples]
	// grown is the backlog's size, in bytes, at which the next log line
	// says it grew, and since when it spilled to disk; free is the space
	// left when last measured, and freeAt the backlog's bytes then.
	grown, freeAt int64
	free          int64
	since         time.Time
}

// sample is what the rates are measured from.
type sample struct {
	at            time.Time
	added, handed uint64
}

const (
	// rateSamples is how many samples, a second apart, the rates span.
	rateSamples = 8
	// measureEvery is how many bytes may be added between two
	// measurements of the free space.
	measureEvery = 16 << 20
)

type memItem[T any] struct {
	seq      uint64
	item     T
	size     int64
	received int64
}

// mark is the receive time of the records from seq on, for the age of
// what waits on disk.
type mark struct {
	seq      uint64
	received int64
}

// markEvery is how far apart in receive time the marks of records held on
// disk are.
const markEvery = int64(time.Second)

// NewBacklog returns a Backlog over sp that hands out first the records
// that Open found not completed, then those added. decode makes the item
// of a record read back from disk. It reads the recovered records once,
// to count them.
func NewBacklog[T any](sp *Spool, cfg BacklogConfig, decode func(seq uint64, r Record) (T, error)) (*Backlog[T], error) {
	if err := cfg.setDefaults(sp.dir); err != nil {
		return nil, err
	}
	b := &Backlog[T]{sp: sp, cfg: cfg, decode: decode, wake: make(chan struct{}, 1), room: make(chan struct{}, 1)}
	b.measureFree()
	b.diskTo = sp.Durable()
	b.diskFrom = b.diskTo
	err := sp.PendingRecords(func(seq uint64, r Record) error {
		b.diskFrom = min(b.diskFrom, seq)
		b.countDisk(seq, int64(len(r.Payload)+len(r.Source)), r.Received)
		return nil
	})
	if err != nil {
		return nil, err
	}
	b.cur = newCursor(sp, b.diskFrom)
	if b.stats.Records > 0 {
		b.cfg.Logger.Warn(b.cfg.Name+": a backlog left by the previous run is processed first",
			"messages", b.stats.Records, "bytes", b.stats.Bytes, "age", b.age(b.cfg.Now()))
		b.since = b.cfg.Now()
		b.grown = 2 * b.stats.Bytes
	}
	return b, nil
}

// measureFree measures the free space of the spool's file system. A
// failure counts as plenty of space: the quota still bounds the backlog.
func (b *Backlog[T]) measureFree() {
	free, _, err := diskSpace(b.sp.dir)
	if err != nil {
		b.cfg.Logger.Warn(b.cfg.Name+": cannot measure free space", "err", err)
		free = math.MaxInt64
	}
	b.free, b.freeAt = free, b.stats.Bytes
}

// Full reports whether the backlog reached its quota, or the spool's file
// system its floor of free space: then the writer should take no input
// (and acknowledge none) until the reader made room. It logs at error
// level when it turns full, and when it turns back.
func (b *Backlog[T]) Full() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if d := b.stats.Bytes - b.freeAt; b.stats.Full || d >= measureEvery || d <= -measureEvery {
		b.measureFree()
	}
	full := b.stats.Bytes >= b.cfg.MaxBytes || b.free < b.cfg.MinFree
	switch {
	case full && !b.stats.Full:
		b.cfg.Logger.Error(b.cfg.Name+": backlog at its disk quota: no longer acknowledging input; the upstream holds or drops what it sends from now on",
			"messages", b.stats.Records, "bytes", b.stats.Bytes, "max_backlog_bytes", b.cfg.MaxBytes,
			"free_bytes", b.free, "min_free_bytes", b.cfg.MinFree, "age", b.age(b.cfg.Now()))
	case !full && b.stats.Full:
		b.cfg.Logger.Warn(b.cfg.Name+": backlog below its disk quota: taking input again",
			"messages", b.stats.Records, "bytes", b.stats.Bytes)
	}
	b.stats.Full = full
	return full
}

// Room returns a channel that receives when the reader took something,
// for a writer waiting while Full.
func (b *Backlog[T]) Room() <-chan struct{} { return b.room }

// age returns how long the oldest record waits. b.mu is held.
func (b *Backlog[T]) age(now time.Time) time.Duration {
	if o := b.oldest(); o != 0 {
		return now.Sub(time.Unix(0, o)).Round(time.Millisecond)
	}
	return 0
}

// oldest returns the receive time of the oldest record waiting, or 0.
// b.mu is held.
func (b *Backlog[T]) oldest() int64 {
	switch {
	case len(b.mem) > 0:
		return b.mem[0].received
	case len(b.marks) > 0:
		return b.marks[0].received
	}
	return 0
}

// grew logs the backlog's growth: once it spills to disk, then at every
// doubling of its bytes. b.mu is held.
func (b *Backlog[T]) grew() {
	if b.stats.OnDisk == 0 || b.stats.Bytes < b.grown {
		return
	}
	now := b.cfg.Now()
	if b.since.IsZero() {
		b.since = now
	}
	b.cfg.Logger.Warn(b.cfg.Name+": backlog growing: the pipeline is behind its input, which waits on disk",
		"messages", b.stats.Records, "bytes", b.stats.Bytes, "age", b.age(now))
	b.grown = 2 * max(b.stats.Bytes, 1)
}

// shrank logs the end of a backlog that spilled to disk. b.mu is held.
func (b *Backlog[T]) shrank() {
	if b.since.IsZero() || b.stats.OnDisk > 0 {
		return
	}
	b.cfg.Logger.Info(b.cfg.Name+": backlog caught up", "after", b.cfg.Now().Sub(b.since).Round(time.Millisecond))
	b.since, b.grown = time.Time{}, 0
}

// sample records the counters for the rates, at most once a second.
// b.mu is held.
func (b *Backlog[T]) sample(now time.Time) {
	if b.sampled > 0 && now.Sub(b.samples[(b.sampled-1)%rateSamples].at) < time.Second {
		return
	}
	b.samples[b.sampled%rateSamples] = sample{at: now, added: b.added, handed: b.handed}
	b.sampled++
}

// countDisk accounts a record held on disk only. b.mu is held, or b is
// not shared yet.
func (b *Backlog[T]) countDisk(seq uint64, size, received int64) {
	if n := len(b.marks); n == 0 || received-b.marks[n-1].received >= markEvery {
		b.marks = append(b.marks, mark{seq: seq, received: received})
	}
	b.stats.OnDisk++
	b.stats.Records++
	b.stats.Bytes += size
}

// Add hands the reader item, of the record seq (0 for an item not
// spooled), whose size in bytes and receive time are given. A spooled
// record must be durable, and added in sequence order. It reports whether
// item is kept in memory; if not, the reader gets the item that decode
// makes of the record read back.
func (b *Backlog[T]) Add(seq uint64, item T, size, received int64) (kept bool) {
	b.mu.Lock()
	switch {
	case seq == 0, b.diskFrom == b.diskTo && len(b.mem) < b.cfg.MemoryRecords && b.memBytes+size <= b.cfg.MemoryBytes:
		b.mem = append(b.mem, memItem[T]{seq: seq, item: item, size: size, received: received})
		b.memBytes += size
		b.stats.Records++
		b.stats.Bytes += size
		kept = true
	default:
		if b.diskFrom == b.diskTo {
			b.diskFrom = seq
		}
		b.diskTo = seq + 1
		b.countDisk(seq, size, received)
		b.grew()
	}
	b.added++
	b.sample(b.cfg.Now())
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
	return kept
}

// Next waits until something waits, then returns up to limit items in buf:
// first those in memory, which come before any held on disk, else those
// read back from disk. It returns ctx's error when ctx ends first, or the
// error reading the spool. Only one goroutine may call it.
func (b *Backlog[T]) Next(ctx context.Context, buf []T, limit int) ([]T, error) {
	buf = buf[:0]
	for {
		b.mu.Lock()
		if n := min(len(b.mem), limit); n > 0 {
			var size int64
			for _, k := range b.mem[:n] {
				buf = append(buf, k.item)
				size += k.size
			}
			rest := copy(b.mem, b.mem[n:])
			clear(b.mem[rest:])
			b.mem = b.mem[:rest]
			b.memBytes -= size
			b.stats.Records -= int64(n)
			b.stats.Bytes -= size
			b.handed += uint64(n)
			b.sample(b.cfg.Now())
			b.mu.Unlock()
			b.madeRoom()
			return buf, nil
		}
		to := b.diskTo
		// Records before diskFrom were handed out from memory.
		b.cur.next = max(b.cur.next, b.diskFrom)
		b.mu.Unlock()
		if b.cur.next < to {
			return b.readBack(buf, to, limit)
		}
		select {
		case <-b.wake:
		case <-ctx.Done():
			return buf, ctx.Err()
		}
	}
}

// readBack reads records before to from disk: up to limit, and no more
// than ReadBatch or, but for the first, MemoryBytes.
func (b *Backlog[T]) readBack(buf []T, to uint64, limit int) ([]T, error) {
	var size int64
	err := b.cur.read(to, min(limit, b.cfg.ReadBatch), b.cfg.MemoryBytes, func(seq uint64, data []byte) error {
		source, received, payload, ok := parseRecord(data)
		if !ok {
			return fmt.Errorf("%w: record %d", ErrBadRecord, seq)
		}
		r := Record{Source: b.intern(source), Received: received, Payload: payload}
		item, err := b.decode(seq, r)
		if err != nil {
			return err
		}
		buf = append(buf, item)
		size += int64(len(r.Payload) + len(r.Source))
		return nil
	})
	b.mu.Lock()
	defer b.mu.Unlock()
	n := int64(len(buf))
	b.stats.Records -= n
	b.stats.OnDisk -= n
	b.stats.Bytes -= size
	b.stats.ReadBack += uint64(n)
	b.handed += uint64(n)
	b.sample(b.cfg.Now())
	defer b.madeRoom()
	next := b.cur.next
	i := 0
	for i+1 < len(b.marks) && b.marks[i+1].seq <= next {
		i++
	}
	b.marks = b.marks[i:]
	if next >= b.diskTo {
		// Caught up with the disk: what is added next is kept in memory.
		b.diskFrom = b.diskTo
		b.marks = b.marks[:0]
		b.cur.close()
		b.shrank()
	}
	return buf, err
}

// maxInterned bounds the sources a Backlog interns: past it they are
// forgotten, so that a stream of ever new ones (a topic per device, and
// devices that come and go) holds no more memory than this.
const maxInterned = 4096

// intern returns source as a string, the same string for the same bytes.
// Only the reader calls it.
func (b *Backlog[T]) intern(source []byte) string {
	if s, ok := b.sources[string(source)]; ok {
		return s
	}
	if b.sources == nil || len(b.sources) >= maxInterned {
		b.sources = make(map[string]string)
	}
	s := string(source)
	b.sources[s] = s
	return s
}

// madeRoom wakes a writer waiting for room.
func (b *Backlog[T]) madeRoom() {
	select {
	case b.room <- struct{}{}:
	default:
	}
}

// Stats returns what waits in the backlog.
func (b *Backlog[T]) Stats() BacklogStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.stats
	st.Oldest = b.oldest()
	if b.sampled == 0 {
		return st
	}
	newest := sample{at: b.cfg.Now(), added: b.added, handed: b.handed}
	first := b.samples[max(0, b.sampled-rateSamples)%rateSamples]
	if d := newest.at.Sub(first.at).Seconds(); d > 0 {
		st.DrainRate = float64(newest.handed-first.handed) / d
		st.AddRate = float64(newest.added-first.added) / d
	}
	if gain := st.DrainRate - st.AddRate; st.Records > 0 && gain > 0 {
		st.CatchUp = time.Duration(float64(st.Records) / gain * float64(time.Second)).Round(time.Second)
	}
	return st
}

// Close releases the file the reader has open.
func (b *Backlog[T]) Close() {
	b.cur.close()
}
