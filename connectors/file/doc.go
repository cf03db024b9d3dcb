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
package file
