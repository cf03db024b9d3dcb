package postgres

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/state"
)

// sinkStateVersion is the version of the form [Sink.Snapshot] writes.
const sinkStateVersion = 1

// Snapshot implements operation.Snapshotter. It writes every row the Sink
// holds, each write committed, and records the table and the epoch they
// were written in; the rows written after it carry the next epoch. A
// restore deletes the rows of the epochs after the one recorded.
//
// The epochs of a run start after the highest one in the table, read at
// the first snapshot, so that a restore never deletes the rows of an
// earlier run; rows written before the first snapshot carry none (NULL)
// and are never deleted.
//
// The inputs of the rows it writes are acknowledged (or failed, for a row
// the database refuses) at the next call the engine makes with their
// emitter. A Sink used by more than one bolt instance refuses: each
// instance takes its snapshot at its own point of the stream, so no one
// epoch separates the rows a checkpoint covers from those it does not.
// Give the sink's bolt one instance (the default).
func (s *Sink) Snapshot(w *state.Writer) error {
	ctx := context.Background()
	s.mu.Lock()
	n := len(s.pending)
	var b *batch // the one instance's
	for _, pb := range s.pending {
		b = pb
	}
	s.mu.Unlock()
	if n > 1 {
		return fmt.Errorf("postgres: checkpoint of %s: used by %d bolt instances, which take their snapshots at different points of the stream; give the sink's bolt one instance", s.table.Sanitize(), n)
	}
	if err := s.connect(ctx); err != nil {
		return err
	}
	if b != nil {
		s.mu.Lock()
		rows := b.rows
		s.mu.Unlock()
		if len(rows) > 0 {
			done, err := s.writeRows(ctx, rows, &b.due)
			s.mu.Lock()
			b.keep(done)
			s.mu.Unlock()
			if err != nil {
				return failed(fmt.Errorf("postgres: checkpoint: %w", err))
			}
		}
	}
	s.mu.Lock()
	epochs := s.epochs
	s.mu.Unlock()
	table := s.table.Sanitize()
	if !epochs {
		ctx, cancel := context.WithTimeout(ctx, s.cfg.WriteTimeout)
		defer cancel()
		var last int64
		if err := s.pool.QueryRow(ctx, fmt.Sprintf("SELECT COALESCE(max(%s), 0) FROM %s", quote(colEpoch), table)).Scan(&last); err != nil {
			return failed(fmt.Errorf("postgres: checkpoint: read the last epoch of %s: %w", table, err))
		}
		s.mu.Lock()
		s.epoch, s.epochs = last, true
		s.mu.Unlock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w.PutUvarint(sinkStateVersion)
	w.PutString(table)
	w.PutVarint(s.epoch)
	s.epoch++
	return nil
}

// Restore implements operation.Snapshotter: in one statement, so one
// transaction, it deletes the rows inserted in the epochs after the one
// the snapshot recorded, which the restored run writes again, and the
// Sink then writes in the next epoch. A row inserted before and merged
// into after the snapshot keeps what was merged: the restored run merges
// the same again (see Sink, "Checkpoints").
//
// On a cluster, where a unit restores its checkpoint on whichever worker
// it moves to, this makes the table exactly once across the move: the
// rows a previous holder wrote after the checkpoint go, whatever worker
// wrote them. Rows gathered and not yet written are dropped: the restored
// run writes them again.
//
// It refuses, with an error wrapping operation.ErrStateMismatch, the
// snapshot of a Sink on another table. It connects, and fails as a write
// does when the database cannot be reached.
func (s *Sink) Restore(r *state.Reader) error {
	operation.CheckVersion(r, "postgres sink", sinkStateVersion)
	table, epoch := r.ReadString(), r.ReadVarint()
	if err := r.Err(); err != nil {
		return fmt.Errorf("postgres: restore the sink: %w", err)
	}
	if want := s.table.Sanitize(); table != want {
		return fmt.Errorf("postgres: restore %s: %w: the checkpoint is of the table %s", want, operation.ErrStateMismatch, table)
	}
	ctx := context.Background()
	if err := s.connect(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.WriteTimeout)
	defer cancel()
	tag, err := s.pool.Exec(ctx, fmt.Sprintf("DELETE FROM %s WHERE %s > $1", table, quote(colEpoch)), epoch)
	if err != nil {
		return failed(fmt.Errorf("postgres: restore %s to epoch %d: %w", table, epoch, err))
	}
	s.mu.Lock()
	s.epoch, s.epochs = epoch+1, true
	// Rows gathered and not written (by an instance that stopped: a unit
	// that moved on a cluster and came back) are the restored run's to
	// write again.
	clear(s.pending)
	s.mu.Unlock()
	s.cfg.Logger.Info("postgres: restored to a checkpoint: deleted the rows written after it, to write them again",
		"table", table, "epoch", epoch, "rows", tag.RowsAffected())
	return nil
}

// addEpoch adds the epoch column to the table, with an index of the rows
// that have one, in one transaction.
func (s *Sink) addEpoch(ctx context.Context) error {
	table := s.table.Sanitize()
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, fmt.Sprintf("ALTER TABLE %s ADD COLUMN IF NOT EXISTS %s bigint", table, quote(colEpoch))); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, fmt.Sprintf("CREATE INDEX IF NOT EXISTS %s ON %s (%s) WHERE %[3]s IS NOT NULL", quote(epochIndex(s.table[len(s.table)-1])), table, quote(colEpoch)))
		return err
	})
}

// epochIndex returns the name of the epoch index of table: table_epoch,
// its table part cut to fit an identifier.
func epochIndex(table string) string {
	const suffix = "_epoch"
	n := min(len(table), maxIdentifier-len(suffix))
	for n > 0 && n < len(table) && !utf8.RuneStart(table[n]) {
		n--
	}
	return table[:n] + suffix
}
