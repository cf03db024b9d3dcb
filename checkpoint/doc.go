// Package checkpoint stores checkpoints: for checkpoint N, the snapshot of
// every instance's state and the manifest that makes N complete.
//
// A [Store] is the small interface the run's coordinator and its instances
// use: [Store.Put] stores one instance's snapshot of N, [Store.Commit]
// writes N's [Manifest] once every snapshot is stored, [Latest] reads the
// newest complete checkpoint, [Store.Get] an instance's snapshot of it and
// [Store.Prune] removes the old ones. A checkpoint whose manifest was not
// written is not complete and is never read, so a run that stops between
// its snapshots and its manifest restores the checkpoint before.
//
// [Dir] is the local Store: a directory, one folder per checkpoint with
// one file per instance and the manifest, each file made of chunks
// checksummed with CRC-32C, fsync'd, renamed into place, the manifest last.
// It is incremental: a snapshot is cut into content-defined chunks (about
// 64 KiB, cut where a rolling hash says, so that a change moves the cuts
// near it only), each stored once under its SHA-256 and shared by the
// checkpoints that hold it; a Put writes the chunks no kept checkpoint
// holds, and Prune removes the chunks no kept checkpoint lists.
// A damaged or missing file is refused with a [*CorruptError] naming the
// file and the offset: the caller decides whether it may fall back to the
// checkpoint before (DESIGN.md: only if every source can still replay from
// that checkpoint's positions), walking [Store.Checkpoints].
//
// # What it is not
//
// Not a codec: snapshots are bytes (package state writes them). Not the
// coordinator: it does not decide when a checkpoint starts or is complete,
// nor which checkpoints to keep (DESIGN.md keeps the two newest). Not a
// database:
// a snapshot is written once, sequentially, and read only at restore.
//
// See DESIGN.md, "Checkpoints and exactly-once output", "The state store".
package checkpoint
