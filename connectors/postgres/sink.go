package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
)

// stageTable is the temporary table a batch is copied into; it lives for
// one transaction (ON COMMIT DROP).
const stageTable = "sensorstorm_stage"

// Stats counts what a Sink did. The counters are safe to read while it
// runs.
type Stats struct {
	// Written counts rows inserted. Merged counts points merged into a
	// row of the same series and time, in the table or in their batch,
	// that they changed; Duplicates those that changed nothing (a point
	// delivered again), acknowledged without a write. Rejected counts
	// particles the table cannot take or the database refused,
	// dead-lettered. Each point held is counted once, when its batch is
	// written; the points of a batch's row that changed nothing in the
	// table are all duplicates.
	Written, Merged, Duplicates, Rejected atomic.Uint64
	// Batches counts committed transactions.
	Batches atomic.Uint64
}

// Sink is an operation that writes data particles to a PostgreSQL table.
// It holds each input until the transaction that wrote it committed.
//
// One Sink may serve several bolt instances: each instance writes its own
// batches. It connects on first use, and Close disconnects.
//
// A Sink implements operation.Snapshotter: with checkpoints, its rows
// are exactly once (see Checkpoints below).
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
// one an earlier version keyed on (series, time): the package
// documentation says how to keep it.
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
// # Checkpoints
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
type Sink struct {
	cfg   Config
	table pgx.Identifier
	stats Stats

	mu      sync.Mutex
	pool    *pgxpool.Pool
	cols    *columns // nil until read from the database
	pending map[operation.Emitter]*batch
	closed  bool
	// epochs is whether the run takes checkpoints: then each row
	// inserted carries epoch, the checkpoint epoch it is written in;
	// before the first checkpoint it carries NULL.
	epochs bool
	epoch  int64
}

// batch is what an emitter's inputs hold: one row per series and time.
type batch struct {
	rows  []row
	index map[rowKey]int // the position of each row in rows
	// due is what became of inputs whose rows a snapshot wrote, to tell
	// the emitter at its next call: a snapshot has no emitter.
	due settled
}

// settler is what the writing of rows tells of their inputs: an
// operation.Emitter, or settled for a snapshot.
type settler interface {
	Ack(a operation.Anchor)
	Fail(a operation.Anchor, err error)
}

// settled records the Acks and Fails of inputs, to pass them on to their
// emitter later.
type settled struct {
	acks  []operation.Anchor
	fails []failure
}

// failure is a recorded Fail.
type failure struct {
	anchor operation.Anchor
	err    error
}

// Ack implements settler.
func (d *settled) Ack(a operation.Anchor) { d.acks = append(d.acks, a) }

// Fail implements settler.
func (d *settled) Fail(a operation.Anchor, err error) { d.fails = append(d.fails, failure{a, err}) }

// tell passes what d recorded on to out, and forgets it.
func (d *settled) tell(out operation.Emitter) {
	for _, a := range d.acks {
		out.Ack(a)
	}
	for _, f := range d.fails {
		out.Fail(f.anchor, f.err)
	}
	d.acks, d.fails = d.acks[:0], d.fails[:0]
}

// row is a held input waiting for its batch to be written, with the
// inputs of the same series and time merged into it.
type row struct {
	p      particle.Particle
	series string
	anchor operation.Anchor
	// merged are the anchors of the inputs merged into p; merges and
	// dups count those that changed p and those that did not.
	merged       []operation.Anchor
	merges, dups int
	// likePrev is whether p has the columns of the row before it in the
	// batch (sameColumns), which then need no second look. It tells
	// nothing of the first row of a slice of rows.
	likePrev bool
}

// each calls fn with the anchor of every input of r.
func (r *row) each(fn func(operation.Anchor)) {
	fn(r.anchor)
	for _, a := range r.merged {
		fn(a)
	}
}

var (
	_ operation.Operation        = (*Sink)(nil)
	_ operation.WatermarkHandler = (*Sink)(nil)
	_ operation.TickHandler      = (*Sink)(nil)
	_ operation.Flusher          = (*Sink)(nil)
	_ operation.Snapshotter      = (*Sink)(nil)
)

// NewSink returns a Sink for cfg, after applying defaults and validating
// it. It does not connect yet.
func NewSink(cfg Config) (*Sink, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	table, _ := tableName(cfg.Table)
	return &Sink{cfg: cfg, table: table, pending: map[operation.Emitter]*batch{}}, nil
}

// Stats returns the sink's counters.
func (s *Sink) Stats() *Stats { return &s.stats }

// Process implements operation.Operation: it checks that in fits the
// table and holds it for the next batch, after writing the batch of out if
// it is full. A particle that does not fit is rejected (ErrColumn wrapped
// in operation.ErrRejected); an error wrapping operation.ErrDestination
// means that nothing was held and the call may be made again.
func (s *Sink) Process(ctx context.Context, in particle.Particle, out operation.Emitter) error {
	s.mu.Lock()
	b := s.batch(out)
	b.due.tell(out)
	full := b.len() >= s.cfg.BatchSize
	if !full && s.cols != nil && !s.closed {
		defer s.mu.Unlock()
		return s.hold(&in, out)
	}
	s.mu.Unlock()
	if full {
		if err := s.write(ctx, out); err != nil {
			return err
		}
	}
	if err := s.connect(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hold(&in, out)
}

// batch returns out's batch. s.mu is held.
func (s *Sink) batch(out operation.Emitter) *batch {
	b := s.pending[out]
	if b == nil {
		b = &batch{index: map[rowKey]int{}}
		s.pending[out] = b
	}
	return b
}

func (b *batch) len() int { return len(b.rows) }

// hold checks that p fits the table and holds it in out's batch, merged
// into the row of its series and time if the batch has one. s.mu is held
// and the table's columns are read.
func (s *Sink) hold(p *particle.Particle, out operation.Emitter) error {
	b := s.batch(out)
	rows := b.rows
	like := len(rows) > 0 && sameColumns(&rows[len(rows)-1].p, p)
	var err error
	if like {
		err = fitValues(p)
	} else {
		err = s.cols.fit(p)
	}
	if err != nil {
		s.stats.Rejected.Add(1)
		return fmt.Errorf("%w: %w", operation.ErrRejected, err)
	}
	series := seriesKey(p)
	k := rowKey{series, p.Time}
	if i, ok := b.index[k]; ok {
		b.merge(i, p, out.Hold())
		return nil
	}
	b.index[k] = len(rows)
	b.rows = append(rows, row{p: *p, series: series, anchor: out.Hold(), likePrev: like})
	return nil
}

// merge merges p, held under anchor, into row i.
func (b *batch) merge(i int, p *particle.Particle, anchor operation.Anchor) {
	r := &b.rows[i]
	r.merged = append(r.merged, anchor)
	changed, newKey := mergeFields(&r.p, p)
	if !changed {
		r.dups++
		return
	}
	r.merges++
	if newKey {
		// The row's columns changed: it is like neither neighbour.
		r.likePrev = false
		if i+1 < len(b.rows) {
			b.rows[i+1].likePrev = false
		}
	}
}

// keep keeps the rows from done on, once those before are written.
func (b *batch) keep(done int) {
	b.rows = b.rows[:copy(b.rows, b.rows[done:])]
	clear(b.index)
	for i := range b.rows {
		b.index[rowKey{b.rows[i].series, b.rows[i].p.Time}] = i
	}
}

// OnWatermark implements operation.WatermarkHandler: it writes what out
// holds, so that the trees of the released particles complete now.
func (s *Sink) OnWatermark(ctx context.Context, _ int64, out operation.Emitter) error {
	return s.write(ctx, out)
}

// OnTick implements operation.TickHandler: it writes what out holds, so
// that a slow stream is written without waiting for a full batch.
func (s *Sink) OnTick(ctx context.Context, _ int64, out operation.Emitter) error {
	return s.write(ctx, out)
}

// Flush implements operation.Flusher: it writes what out holds.
func (s *Sink) Flush(ctx context.Context, out operation.Emitter) error {
	return s.write(ctx, out)
}

// Close disconnects. The engine calls it after Flush; calls after the
// first do nothing.
func (s *Sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed && s.pool != nil {
		s.pool.Close()
	}
	s.closed = true
	return nil
}

// connect opens the pool, creates the table when missing and reads its
// columns, once.
func (s *Sink) connect(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("postgres: sink closed")
	}
	if s.cols != nil {
		return nil
	}
	if s.pool == nil {
		pcfg, err := pgxpool.ParseConfig(s.cfg.URL)
		if err != nil {
			return fmt.Errorf("%w: url: %w", ErrInvalidConfig, err)
		}
		if s.pool, err = pgxpool.NewWithConfig(ctx, pcfg); err != nil {
			return failed(fmt.Errorf("postgres: connect: %w", err))
		}
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.WriteTimeout)
	defer cancel()
	table := s.table.Sanitize()
	create := fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (%s timestamptz NOT NULL, %s bigint NOT NULL, %s text NOT NULL, %s text NOT NULL, PRIMARY KEY (%[4]s, %[3]s))`,
		table, quote(colTime), quote(colTimeNS), quote(colSeries), quote(colMeasurement))
	if _, err := s.pool.Exec(ctx, create); err != nil {
		return failed(fmt.Errorf("postgres: create table %s: %w", table, err))
	}
	rows, err := s.pool.Query(ctx, `SELECT attname, format_type(atttypid, NULL) FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped`, table)
	if err != nil {
		return failed(fmt.Errorf("postgres: read columns of %s: %w", table, err))
	}
	cols := &columns{types: map[string]colType{}, created: map[string]bool{}}
	var name, typ string
	if _, err := pgx.ForEachRow(rows, []any{&name, &typ}, func() error {
		cols.types[name], cols.created[name] = colType(typ), true
		return nil
	}); err != nil {
		return failed(fmt.Errorf("postgres: read columns of %s: %w", table, err))
	}
	if _, ok := cols.types[colTimeNS]; !ok {
		return fmt.Errorf("%w: postgres: table %s: %w", operation.ErrRefused, table, ErrNoTimeNS)
	}
	switch typ, ok := cols.types[colEpoch]; {
	case !ok:
		if err := s.addEpoch(ctx); err != nil {
			return failed(fmt.Errorf("postgres: table %s: add the epoch column (or add it by hand: ALTER TABLE %[1]s ADD COLUMN epoch bigint): %[2]w", table, err))
		}
		cols.types[colEpoch], cols.created[colEpoch] = typeBigint, true
	case typ != typeBigint:
		return fmt.Errorf("%w: postgres: table %s: column epoch has type %s; the sink keeps each row's checkpoint epoch there, a bigint", operation.ErrRefused, table, typ)
	}
	s.cols = cols
	s.cfg.Logger.Info("postgres: table ready", "table", table, "columns", len(cols.types))
	return nil
}

// write writes the rows out holds and acknowledges them. A row the
// database refuses for its data is failed as rejected and the others are
// written; on any other error the rows not yet written stay held, and the
// error wraps operation.ErrDestination.
func (s *Sink) write(ctx context.Context, out operation.Emitter) error {
	s.mu.Lock()
	b := s.batch(out)
	b.due.tell(out)
	rows := b.rows
	s.mu.Unlock()
	if len(rows) == 0 {
		return nil
	}
	done, err := s.writeRows(ctx, rows, out)
	s.mu.Lock()
	b.keep(done)
	s.mu.Unlock()
	if err != nil {
		return failed(fmt.Errorf("postgres: %w", err))
	}
	return nil
}

// failed marks err as the error of a failing destination: refused for
// good when retrying cannot help (the run then stops at once with the
// server's message), an outage to retry otherwise.
func failed(err error) error {
	if refused(err) {
		return fmt.Errorf("%w: %w", operation.ErrRefused, err)
	}
	return fmt.Errorf("%w: %w", operation.ErrDestination, err)
}

// refused reports whether err says that the database refuses the sink's
// work for good: no such database or schema, credentials or privileges
// it does not grant, a column of a type the sink cannot write, a view or
// a table without the unique index on (series, time_ns) (SQLSTATE class
// 28, 3D000, 3F000, 42501, 42804, 42846, 42809, 42P10), what Check found
// wrong, or a server that refuses TLS when the URL asks for it.
func refused(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "3D000", "3F000", "42501", "42804", "42846", "42809", "42P10":
			return true
		}
		return strings.HasPrefix(pe.Code, "28")
	}
	for _, checked := range []error{ErrNoSchema, ErrPrivilege, ErrTable, ErrNoTimeNS} {
		if errors.Is(err, checked) {
			return true
		}
	}
	// pgconn has no sentinel for it.
	return strings.Contains(err.Error(), "server refused TLS connection")
}

// writeRows writes rows in one transaction and acknowledges them. When the
// database refuses the batch for its data, it writes each half in turn, so
// that only the rows it refuses alone are failed. It returns how many rows
// from the start of rows are done: written or failed.
func (s *Sink) writeRows(ctx context.Context, rows []row, out settler) (int, error) {
	err := s.tx(ctx, rows)
	switch {
	case err == nil:
		for i := range rows {
			rows[i].each(out.Ack)
		}
		return len(rows), nil
	case !dataError(err):
		return 0, err
	case len(rows) == 1:
		err = fmt.Errorf("%w: postgres: %w", operation.ErrRejected, err)
		rows[0].each(func(a operation.Anchor) {
			s.stats.Rejected.Add(1)
			out.Fail(a, err)
		})
		return 1, nil
	}
	half := len(rows) / 2
	done, err := s.writeRows(ctx, rows[:half], out)
	if err != nil {
		return done, err
	}
	more, err := s.writeRows(ctx, rows[half:], out)
	return done + more, err
}

// tx writes rows in one transaction. It copies them straight into the
// table, with the columns they need added first, and only when that meets
// a row already there (a redelivery, or more fields of a point) goes
// through the staging table, merging into the rows there.
func (s *Sink) tx(ctx context.Context, rows []row) error {
	s.mu.Lock()
	names, added := s.batchColumns(rows)
	epoch := pgtype.Int8{Int64: s.epoch, Valid: s.epochs}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.WriteTimeout)
	defer cancel()
	// Without a row in the table already, every row is inserted.
	var upserted map[rowKey]bool
	err := s.copyRows(ctx, rows, names, added, epoch)
	if duplicateKey(err) {
		upserted, err = s.upsertRows(ctx, rows, names, added, epoch)
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	for _, c := range added {
		s.cols.created[c.name] = true
	}
	s.mu.Unlock()
	s.stats.Batches.Add(1)
	for i := range rows {
		r := &rows[i]
		inserted, changed := true, true
		if upserted != nil {
			inserted, changed = upserted[rowKey{r.series, r.p.Time}]
		}
		switch {
		case !changed:
			// The table had all of it: every point of the row is one
			// delivered again.
			s.stats.Duplicates.Add(uint64(1 + r.merges + r.dups))
			continue
		case inserted:
			s.stats.Written.Add(1)
		default:
			s.stats.Merged.Add(1)
		}
		s.stats.Merged.Add(uint64(r.merges))
		s.stats.Duplicates.Add(uint64(r.dups))
	}
	return nil
}

// copyRows copies rows into the table. Without columns to add, that is a
// COPY statement alone: a transaction of its own, which the server
// commits before it reports the COPY complete, so the batch is as safe as
// in a BEGIN ... COMMIT without the round trips of those two. With
// columns to add, the COPY follows the ALTER TABLEs in one transaction.
// Nothing is written when a row is in the table already.
func (s *Sink) copyRows(ctx context.Context, rows []row, names []string, added []column, epoch pgtype.Int8) error {
	if len(added) == 0 {
		if _, err := s.pool.CopyFrom(ctx, s.table, names, newRowSource(rows, names, epoch)); err != nil {
			return fmt.Errorf("copy: %w", err)
		}
		return nil
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := s.addColumns(ctx, tx, added); err != nil {
			return err
		}
		if _, err := tx.CopyFrom(ctx, s.table, names, newRowSource(rows, names, epoch)); err != nil {
			return fmt.Errorf("copy: %w", err)
		}
		return nil
	})
}

// upsertRows writes rows in one transaction through the staging table,
// merging each into the row of its series and time if the table has one:
// a column the row fills takes its value. It returns the keys of the rows
// it inserted (true) and of those it merged into, which changed (false); a
// row that would change nothing is a duplicate, left alone.
func (s *Sink) upsertRows(ctx context.Context, rows []row, names []string, added []column, epoch pgtype.Int8) (map[rowKey]bool, error) {
	table := s.table.Sanitize()
	keys := names[len(fixedColumns):]
	set := make([]string, len(keys))
	changes := make([]string, len(keys))
	for i, k := range keys {
		q := quote(k)
		set[i] = fmt.Sprintf("%s = COALESCE(EXCLUDED.%[1]s, t.%[1]s)", q)
		changes[i] = fmt.Sprintf("(EXCLUDED.%[1]s IS NOT NULL AND EXCLUDED.%[1]s IS DISTINCT FROM t.%[1]s)", q)
	}
	// A batch of particles without tags or fields has nothing to merge.
	action := "NOTHING"
	if len(keys) > 0 {
		action = fmt.Sprintf("UPDATE SET %s WHERE %s", strings.Join(set, ", "), strings.Join(changes, " OR "))
	}
	// xmax is 0 in a row version that an insert made, not an update.
	upsert := fmt.Sprintf("INSERT INTO %s AS t (%s) SELECT %[2]s FROM %s ON CONFLICT (%[4]s, %[5]s) DO %[6]s RETURNING t.%[4]s, t.%[5]s, t.xmax = 0",
		table, quoteAll(names), stageTable, quote(colSeries), quote(colTimeNS), action)
	var upserted map[rowKey]bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := s.addColumns(ctx, tx, added); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, fmt.Sprintf("CREATE TEMP TABLE %s (LIKE %s INCLUDING DEFAULTS) ON COMMIT DROP", stageTable, table)); err != nil {
			return fmt.Errorf("create staging table: %w", err)
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{stageTable}, names, newRowSource(rows, names, epoch)); err != nil {
			return fmt.Errorf("copy to staging table: %w", err)
		}
		res, err := tx.Query(ctx, upsert)
		if err != nil {
			return fmt.Errorf("upsert: %w", err)
		}
		upserted = make(map[rowKey]bool, len(rows))
		var (
			k        rowKey
			inserted bool
		)
		if _, err := pgx.ForEachRow(res, []any{&k.series, &k.time, &inserted}, func() error {
			upserted[k] = inserted
			return nil
		}); err != nil {
			return fmt.Errorf("upsert: %w", err)
		}
		return nil
	})
	return upserted, err
}

// addColumns adds the columns added to the table in tx.
func (s *Sink) addColumns(ctx context.Context, tx pgx.Tx, added []column) error {
	table := s.table.Sanitize()
	for _, c := range added {
		if _, err := tx.Exec(ctx, fmt.Sprintf("ALTER TABLE %s ADD COLUMN IF NOT EXISTS %s %s", table, quote(c.name), c.typ)); err != nil {
			return fmt.Errorf("add column %q: %w", c.name, err)
		}
	}
	return nil
}

// batchColumns returns the columns rows fill, in a fixed order, and those
// of them not yet in the table. s.mu is held.
func (s *Sink) batchColumns(rows []row) (names []string, added []column) {
	seen := map[string]bool{}
	for i := range rows {
		if i > 0 && rows[i].likePrev {
			continue
		}
		p := &rows[i].p
		for _, t := range p.Tags {
			seen[t.Key] = true
		}
		for _, f := range p.Fields {
			seen[f.Key] = true
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
		if !s.cols.created[k] {
			added = append(added, column{k, s.cols.types[k]})
		}
	}
	slices.Sort(keys)
	slices.SortFunc(added, func(a, b column) int { return strings.Compare(a.name, b.name) })
	return append(slices.Clone(fixedColumns), keys...), added
}

// dataError reports whether the database refused err's statement for the
// data in it (SQLSTATE classes 22, data exception, 23, integrity
// constraint violation, and 54, program limit exceeded: a series too long
// for the index), rather than failing itself.
func dataError(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Code[:2] {
	case "22", "23", "54":
		return true
	}
	return false
}

// duplicateKey reports whether err is a unique violation (SQLSTATE 23505).
func duplicateKey(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

func quote(name string) string { return pgx.Identifier{name}.Sanitize() }

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = quote(n)
	}
	return strings.Join(q, ", ")
}
