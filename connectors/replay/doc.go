// Package replay replays recordings into a topology at an adjusted speed.
//
// A [Source] reads recordings (line protocol, plain or gzip, or delimited
// text mapped to particles; see package file), merges them by event time
// into one stream, and emits each particle when the schedule says: the
// event-time gap from the first particle divided by the speed factor, from
// 0.01x (a hundred times slower than recorded) to 10000x, or [Max] for as
// fast as downstream takes them. The speed can be changed, and the replay
// paused and resumed, while it runs: from Go (SetSpeed, Pause, Resume),
// over HTTP ([Handler]), or from the sensorstorm command's keys. A Source
// is its run's stream clock ([Source.Now], for topology.Config.Clock), so
// that timers, ticks and TTL eviction follow the replay at once, and every
// change also travels downstream as a metaparticle.SpeedChange. None of it
// changes what the pipeline computes: its output is a function of the
// recordings. A record with a wild timestamp (Config.FutureBound) is
// rejected, judged against the recording, never waited for.
//
// Guarantees:
//   - Order: inputs are merged by event time, ties in the order of the
//     inputs; a file that goes back in time is replayed as recorded, and
//     downstream synchronization buffers judge what is late. Concat reads
//     the inputs one after the other instead.
//   - Memory: files stream; each input is decoded in goroutines of its
//     own, in parallel with pacing and emission, whatever its size. Line
//     protocol is cut into blocks of whole lines (64 KiB, or one longer
//     line), decoded on up to four goroutines per input (about one per
//     processor over all inputs) and merged in the file's order, at most
//     two blocks more than the decoding goroutines ahead of the merge.
//     Delimited text is decoded in one goroutine, at most three batches
//     ahead, of up to 256 records (fewer with more than four inputs) and
//     256 KiB of file each.
//   - Pacing: every emission is scheduled from an anchor (the first
//     particle, moved by each change), never from the previous emission,
//     so there is no drift over long replays; particles due together are
//     emitted together and handed downstream before the source sleeps.
//   - Bad input: a malformed record is rejected through the topology with
//     its file, line and column (counted as invalid, dead-lettered), and
//     the replay goes on.
//   - Range and loop: [From, To) selects records by event time; Loop
//     replays again with event time moved forward by the span of the
//     recording plus its first gap, so that it keeps increasing.
//
// It is not a generic file source: package file's Source emits files as
// fast as possible, one after the other, without pacing or merging.
//
// Time is injected: Config.Wall is the wall clock and its timers, which
// tests replace with a fake that moves only when told.
//
// See DESIGN.md, "Stream clock and replay".
package replay
