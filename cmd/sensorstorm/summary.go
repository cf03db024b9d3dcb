package main

import (
	"fmt"
	"log/slog"

	"github.com/sensorstorm/sensorstorm/topology"
)

// summary is what a command read and what became of it: the last line
// replay, ingest and run write on stderr. Every record read is counted
// once, so that
//
//	read = emitted + late + invalid + skipped + outside + duplicates
//
// Refused, apart, counts emitted particles that a bolt refused for good
// (a sink that failed them, dead-lettered): they are part of Emitted.
// Meta particles are not records and are not counted.
type summary struct {
	// Read counts the records read: lines, rows, JSON objects.
	Read uint64
	// Emitted counts the particles that went through the pipeline's
	// first bolts in event-time order.
	Emitted uint64
	// Late counts particles handled by a late policy (dropped, sent to
	// the late stream or passed through out of order).
	Late uint64
	// Invalid counts malformed records and particles a bolt rejected
	// (timestamps too far ahead of the stream clock).
	Invalid uint64
	// Skipped counts records without a value (every one missing);
	// Outside records outside the replay's --from/--to range.
	Skipped, Outside uint64
	// Duplicates counts particles a dedup operation dropped, and points
	// a PostgreSQL sink dropped because they changed nothing in its table.
	Duplicates uint64
	// Refused counts the particles dead-lettered as failed: trees given
	// up on, untracked inputs an operation failed.
	Refused uint64
}

// attrs returns the summary's counts, in the order of its line.
func (s summary) attrs() []slog.Attr {
	return []slog.Attr{slog.Uint64("read", s.Read), slog.Uint64("emitted", s.Emitted), slog.Uint64("late", s.Late),
		slog.Uint64("invalid", s.Invalid), slog.Uint64("skipped", s.Skipped), slog.Uint64("outside", s.Outside),
		slog.Uint64("duplicates", s.Duplicates), slog.Uint64("refused", s.Refused)}
}

// valid tells whether any record read was valid, or nothing was read.
// Input that is all invalid (a wrong --format, a gzip file without .gz)
// makes a command fail rather than end quietly.
func (s summary) valid() bool {
	return s.Invalid == 0 || s.Read > s.Invalid
}

// write writes the summary line to r and returns code, or exitError if
// the input was all invalid, which it then says.
func (s summary) write(r reporter, code int) int {
	r.line("summary", s.attrs()...)
	if !s.valid() {
		r.fail(fmt.Errorf("no valid input: all %d records read were invalid (wrong --format? a gzip file not named .gz?)", s.Read))
		return exitError
	}
	return code
}

// addSource counts what a source's instances read: the particles they
// emitted and the bad input they rejected, malformed or beyond the future
// bound. It returns how many they emitted.
func (s *summary) addSource(c *topology.ComponentStats) uint64 {
	out, invalid := c.Out.Load(), c.Invalid.Load()
	s.Read += out + invalid
	s.Invalid += invalid
	return out
}

// addRefused counts what the components refused for good.
func (s *summary) addRefused(stats func(string) *topology.ComponentStats, components []string) {
	for _, name := range components {
		s.Refused += stats(name).DeadLettered.Load()
	}
}

// duplicates counts n particles emitted as duplicates dropped.
func (s *summary) duplicates(n uint64) {
	s.Duplicates += n
	s.Emitted -= min(s.Emitted, n)
}

// addBolt counts what a bolt that sources feed did with the particles
// the sources emitted: emitted is what they emitted into it, of which the
// bolt found some late or invalid.
func (s *summary) addBolt(emitted uint64, b *topology.ComponentStats) {
	late, invalid := b.Late.Load(), b.Invalid.Load()
	s.Late += late
	s.Invalid += invalid
	s.Emitted += emitted - min(emitted, late+invalid)
}

// dataIn is how many data particles a bolt received: In counts meta
// particles too, each copy of them.
func dataIn(s *topology.ComponentStats) uint64 {
	return s.In.Load() - s.Meta.Load() - s.Duplicates.Load()
}
