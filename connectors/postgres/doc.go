// Package postgres writes particles to a PostgreSQL (or TimescaleDB) table,
// in batches, exactly once per (series, time).
//
// # Table
//
// The table is created when missing, with a schema that plain SQL and
// Grafana's PostgreSQL data source query directly:
//
//	time         timestamptz NOT NULL  the particle's event time (microseconds: PostgreSQL's precision)
//	series       text NOT NULL         measurement and sorted tags in line protocol: cpu,host=a
//	measurement  text NOT NULL
//	<tag>        text                  one column per tag key
//	<field>      per the field's kind:  float double precision, int and uint bigint,
//	                                   string text, bool boolean
//	PRIMARY KEY (series, time)
//
// A tag or field key not yet in the table is added as a column (ALTER
// TABLE ADD COLUMN, nullable) in the transaction that writes the first
// particle carrying it; rows written before have NULL there. A table made
// by hand must have the time, series and measurement columns and a unique
// index on (series, time).
//
// # Exactly once in the table
//
// A batch is copied (COPY) straight into the table in one transaction
// (the COPY statement alone when no column is added). When a row of it
// is there already, the COPY fails whole and writes nothing; the batch is
// then copied into a temporary staging table and inserted with INSERT ...
// ON CONFLICT (series, time) DO NOTHING, in one transaction. A particle
// delivered again, after a crash or a replay, so adds no row: the first
// particle of a series at a time wins, also over a later one with other
// fields (counted as Duplicates).
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
// Any other error is the destination's (connection refused or lost, a
// timeout, a server shutting down, a full disk): the call returns an error
// wrapping operation.ErrDestination, nothing is acknowledged, and the engine
// retries the same call with backoff, which holds the sources back.
package postgres
