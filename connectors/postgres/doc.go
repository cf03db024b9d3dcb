// Package postgres writes particles to a PostgreSQL (or TimescaleDB) table,
// in batches: one row per point, a series at a time in nanoseconds, the
// fields of a point written twice merged as InfluxDB merges them.
//
// # Table
//
// The table is created when missing, with a schema that plain SQL and
// Grafana's PostgreSQL data source query directly:
//
//	time         timestamptz NOT NULL  the particle's event time (microseconds: PostgreSQL's precision)
//	time_ns      bigint NOT NULL       the event time in nanoseconds since the Unix epoch
//	series       text NOT NULL         measurement and sorted tags in line protocol: cpu,host=a
//	measurement  text NOT NULL
//	epoch        bigint                the checkpoint epoch the row was inserted in, NULL without checkpoints
//	<tag>        text                  one column per tag key
//	<field>      per the field's kind:  float double precision, int and uint bigint,
//	                                   string text, bool boolean
//	PRIMARY KEY (series, time_ns)
//
// Rows are keyed on the nanoseconds, not on time, which would make
// readings a few nanoseconds apart one row; time is there to be queried.
// An index on epoch, of the rows that have one, serves restores (see
// Checkpoints below); rows written without checkpoints do not enter it.
// A table without the
// epoch column (made by hand, or by an earlier version) gets it at
// connection (ALTER TABLE ADD COLUMN IF NOT EXISTS epoch bigint, nullable,
// which PostgreSQL does without rewriting the table, and the index); a
// role that may not alter the table is refused with the statement to run
// instead. An epoch column of another type than bigint is refused. The
// names time, time_ns, series, measurement and epoch are reserved: a
// particle with a tag or field of one of them is rejected.
//
// A tag or field key not yet in the table is added as a column (ALTER
// TABLE ADD COLUMN, nullable) in the transaction that writes the first
// particle carrying it; rows written before have NULL there. A table made
// by hand must have the time, time_ns, series and measurement columns and
// a unique index on (series, time_ns), and no unique index on (series,
// time). The sink refuses a table without time_ns (ErrNoTimeNS), such as
// one an earlier version keyed on (series, time); to keep it:
//
//	ALTER TABLE t ADD COLUMN time_ns bigint;
//	UPDATE t SET time_ns = (extract(epoch FROM time) * 1000000)::bigint * 1000;
//	ALTER TABLE t ALTER COLUMN time_ns SET NOT NULL;
//	ALTER TABLE t DROP CONSTRAINT t_pkey, ADD PRIMARY KEY (series, time_ns);
//
// # One row per point, nothing lost
//
// Points of a series at the same nanosecond are one point, as in
// InfluxDB: the fields of a later one merge into the row, its values
// winning, the row's other columns kept. Within a batch they merge before
// the write. A batch is copied (COPY) straight into the table in one
// transaction (the COPY statement alone when no column is added). When a
// row of it is there already, the COPY fails whole and writes nothing; the
// batch is then copied into a temporary staging table and merged with
// INSERT ... ON CONFLICT (series, time_ns) DO UPDATE, in one transaction,
// updating only rows it changes. A point delivered again, after a crash or
// a replay, so changes nothing: it is acknowledged and counted in
// Stats.Duplicates, the one thing the sink drops. Every point held is
// counted once: Written (a new row), Merged (it changed a row),
// Duplicates or Rejected.
//
// # Acknowledgement and failures
//
// The Sink holds every input and acknowledges it only after the
// transaction that wrote it committed. It writes a batch when the engine's
// watermark progresses, at every tick, at the end of the stream and when a
// batch is full.
//
// A particle the table cannot take is bad data, rejected with
// operation.ErrRejected (the engine dead-letters it): a key that names no
// valid column (too long, reserved), a field whose kind does not match its
// column's type (a string for a double precision column: a type
// conflict), a uint over the bigint range, a string that is not UTF-8 or
// holds NUL. A row the database itself refuses for its data (a check or
// not-null constraint, a series too long for the index: SQLSTATE classes
// 22, 23 and 54) is found by writing the
// batch in halves; the rest of the batch is written and the row's input is
// failed with an error wrapping operation.ErrRejected.
//
// An error that retrying cannot mend (no such database or schema, a role
// that does not exist or may not log in, a wrong password, permission
// denied, a column of a type the sink cannot write, a view or a table
// without the unique index on (series, time_ns), a server refusing TLS
// that the URL asks for) wraps operation.ErrRefused: the engine stops the
// run at once with the server's message, acknowledging nothing.
//
// [Check] finds these before a run, without writing: it connects, and
// checks the schema, the table's columns and index (or that the role may
// create it) and the role's privileges, returning a *CheckError that
// names the database, schema and table and is refused or not as the
// Sink's errors are.
//
// Any other error is the destination's (connection refused or lost, a
// timeout, a server shutting down or at its connection limit, a full
// disk): the call returns an error wrapping operation.ErrDestination,
// nothing is acknowledged, and the engine retries the same call with
// backoff, which holds the sources back.
//
// # Checkpoints: exactly-once rows
//
// With checkpoints the Sink's rows are exactly once: however often the
// run is killed (SIGKILL included) and restored, the table ends with the
// rows of a run never killed, the same values for a recording, the same
// set for a live feed. Each row carries the checkpoint epoch it was
// inserted in. At a checkpoint ([Sink.Snapshot]) the Sink writes and
// commits every row it holds and records the epoch; the rows written after
// carry the next one. A restored run's Sink ([Sink.Restore]) deletes the
// rows of the epochs after the recorded one, in one statement, and the
// restored run writes them again. A run's epochs start after the highest
// in the table, so a restore leaves earlier runs' rows alone; rows
// written before a run's first checkpoint carry NULL and are never
// deleted (a run killed before its first checkpoint starts over, and its
// points merge into their rows as duplicates).
//
// A row keeps the epoch it was inserted in when a later point merges into
// it, so a restore does not undo a merge made after its checkpoint: the
// restored run makes it again when its input comes again, as a
// recording's does; a live feed's point merged before the kill and never
// delivered again stays merged. A restore deletes every row of a later
// epoch, whoever wrote it: for exactly once, one Sink writes the table,
// with one bolt instance; a Sink used by several refuses to take a
// snapshot. Without checkpoints (Snapshot never called) every row's epoch
// is NULL and the Sink is as before: at least once, a point delivered
// again being a duplicate that changes nothing.
package postgres
