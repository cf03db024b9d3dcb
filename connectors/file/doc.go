// Package file reads recordings from files into a topology and writes
// particles out as line protocol.
//
// A [Reader] reads the records of one file as particles, streaming it:
// line protocol (plain or gzip), or delimited text (CSV, semicolons,
// whitespace, ...) mapped to particles by a [Format]: which columns hold
// the time (a Go layout, auto or an epoch unit, in a time zone), the tags
// and the fields (typed), with decimal commas, thousands separators,
// missing-value sentinels and a header or none. [Preset] gives ready
// formats, among them the public datasets UCI Air Quality, UCI Occupancy
// Detection and the ULB sensor network, quirks included. A malformed
// record is a *particle.DecodeError naming the file, line and column; the
// Reader goes on with the next one.
//
// [Source] emits the particles of files one after the other, as fast as
// downstream takes them; package replay paces, merges and controls
// replays. [Sink] is an operation that writes every particle it receives
// as one line of line protocol; placed as the last bolt, its
// synchronization buffer makes the output come out in event-time order.
// What a Sink writes, a Reader reads back.
//
// # Checkpoints: exactly-once output
//
// With checkpoints a Sink on a file of [OpenSink] writes it exactly once:
// however often the run is killed (SIGKILL included) and restored, the
// file ends byte for byte as after a run never killed, for a recording.
// At a checkpoint ([Sink.Snapshot]) the Sink writes what it gathered,
// fsyncs the file and records its path and length; a restored run's Sink
// ([Sink.Restore]) cuts the file back to that length, dropping what was
// written after the checkpoint (a torn line included), and the restored
// run writes it again. So that a restore finds the checkpoint's output in
// place, OpenSink does not truncate the file when it opens it: the Sink
// truncates it (or, appending, cuts a torn last line off) at its first
// write, unless a restore came first. A file that is missing, shorter than
// recorded or another one is refused with an error naming it: that
// checkpoint's output is lost.
//
// A Sink on a writer (standard output, a pipe) cannot take back what it
// wrote: it is at least once. Exactly once needs one bolt instance
// writing the file, as event-time order does.
package file
