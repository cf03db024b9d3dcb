// Package postgres writes particles to a PostgreSQL (or TimescaleDB) table,
// in batches: one row per point, a series at a time in nanoseconds, the
// fields of a point written twice merged as InfluxDB merges them.
//
// A [Sink] is an operation; it creates its table when missing, with a
// schema that plain SQL and Grafana's PostgreSQL data source query
// directly (one column per tag and per field, keyed on series and
// nanoseconds):
//
//	sink, err := postgres.NewSink(postgres.Config{
//		URL:   "postgres://sensorstorm@localhost/metrics",
//		Table: "readings",
//	})
//	if err != nil {
//		return err
//	}
//	defer sink.Close()
//	topo.AddBolt("store", operation.Stateless(sink), topology.BoltConfig{}).
//		Input("mean", topology.Global())
//
// The Sink holds every input and acknowledges it only after the
// transaction that wrote it committed. A point delivered again, after a
// crash or a replay, merges into its row and changes nothing. A particle
// the table cannot take, or a row the database refuses for its data, is
// dead-lettered; a database away is retried by the engine; what retrying
// cannot mend (no such database, a refused login, a missing privilege)
// stops the run at once. [Check] finds the latter before a run, without
// writing. The Sink's documentation has the table's schema and every
// case; docs/sinks.md how a pipeline uses it.
//
// With checkpoints ([Sink.Snapshot], [Sink.Restore]) the rows are exactly
// once: however often the run is killed and restored, the table ends with
// the rows of a run never killed.
//
// # A table of an earlier version
//
// The Sink refuses a table without time_ns ([ErrNoTimeNS]), such as one
// an earlier version keyed on (series, time); to keep it:
//
//	ALTER TABLE t ADD COLUMN time_ns bigint;
//	UPDATE t SET time_ns = (extract(epoch FROM time) * 1000000)::bigint * 1000;
//	ALTER TABLE t ALTER COLUMN time_ns SET NOT NULL;
//	ALTER TABLE t DROP CONSTRAINT t_pkey, ADD PRIMARY KEY (series, time_ns);
//
// # What it is not
//
// It does not read the table back, nor migrate a table of another shape:
// it adds the columns of new tags and fields and the epoch column, and
// refuses a table it cannot write (no time_ns, a column of a type it
// cannot write). It is not for a table others write while it takes
// checkpoints: a restore deletes every row of a later epoch, whoever wrote
// it. Without checkpoints it is at least once, a point delivered again
// being a duplicate that changes nothing.
package postgres
