// Package spool is a write-ahead log of opaque records that makes input
// durable before it is processed, so that a source can acknowledge its
// upstream (an MQTT broker) at once and still lose nothing when the
// process is killed.
//
// Records are appended to a buffer and made durable together by Sync: one
// write and one fsync for every record appended since the last Sync (group
// commit). Each record has a sequence number, increasing by one from
// record to record. When a record has been processed, Complete marks it;
// the mark is written with the next Sync. The log is a directory of
// segment files; a segment is deleted once it and every older segment hold
// only completed records, so the spool's size follows what is in flight,
// not what went through.
//
// The segment being written is kept zero-filled some way past its end
// (Config.Preallocate), so that a Sync overwrites space the file already
// has: its fdatasync then flushes the data and nothing else, where an
// append must also commit the new file size through the file system's
// journal (on ext4 and XFS), which costs more and waits, on a busy
// machine, for the kernel's journal thread and for other files' data.
//
// Open reads what a previous process left: records without a completion
// mark are handed to the caller by Pending, to be processed again. Every
// frame carries a marker and a checksum, and every Sync ends its bytes
// with a commit frame, so that Open tells two kinds of damage apart. A
// torn last write (the process or the machine died during a Sync, which
// therefore never returned and acknowledged nothing) is cut off silently:
// damage in the newest segment after its last intact commit. Anything
// else (a damaged byte well before the end, in any segment, a missing
// segment, first, last or between, or a log that ends before what a Sync
// acknowledged) hit records that were acknowledged: Open fails with a
// *CorruptError that counts them, or, with Config.Repair, skips to the
// next intact frame, cuts the damage out of the file, logs it and counts
// the records lost in Stats.Lost. The ends no segment can tell are kept
// in a small file, ENDS: the oldest segment's first record, and the
// number below which a Sync acknowledged every record, stored by each
// Sync after its fdatasync, with a write to the page cache and no flush
// of its own (it is flushed when a segment is started or deleted, and by
// Open and Close). After the machine died, rather than the process, it
// may therefore lag by what the kernel had not yet written back, and a
// cut of those last records goes unnoticed; it never runs ahead, so it
// raises no false alarm. A spool without ENDS (written before it
// existed) is opened unchecked, with a warning.
//
// A Sync that fails to write (a full disk) fails the Spool: it and every
// later Append and Sync return ErrFailed, so that nothing is acknowledged
// after a hole. What it left is not damage: the next Open cuts it off as
// a torn last write, or hands out its records if they reached the disk
// whole.
//
// Guarantees: a record is durable once a Sync that began after its Append
// returned without error; a completed record is not handed out by Pending
// again unless its mark was not yet written when the process died (so a
// record may be processed twice, never zero times). Records are handed out
// in sequence order.
//
// A spool is not a queue between goroutines (records are not read back
// while the process runs) and not a database: it keeps one bit per record
// of its live segments in memory, and a directory belongs to one Spool at
// a time (Open locks it: flock on Unix, LockFileEx on Windows; on other
// platforms nothing keeps out a second Spool).
//
// On Linux, Sync flushes with fdatasync; elsewhere with File.Sync (on
// macOS F_FULLFSYNC, which also empties the drive's cache, and costs so).
//
// See DESIGN.md, "MQTT": PUBACK only once a message can no longer be lost.
package spool
