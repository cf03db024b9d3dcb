package checkpoint

import (
	"context"
	"fmt"
)

// Store keeps checkpoints. Its methods may be called concurrently; Put of
// different instances of one checkpoint typically are.
type Store interface {
	// Put stores instance's snapshot of checkpoint id, durably before it
	// returns. A Put again of the same instance and id replaces it.
	Put(ctx context.Context, id uint64, instance string, snapshot []byte) error
	// Commit writes m, the manifest of checkpoint m.ID, after checking
	// that every instance it lists was Put: once it returns, the
	// checkpoint is complete and durable. A Commit of a checkpoint
	// complete already fails with an error wrapping ErrCommitted.
	Commit(ctx context.Context, m Manifest) error
	// Checkpoints returns the ids of the complete checkpoints, newest
	// first.
	Checkpoints(ctx context.Context) ([]uint64, error)
	// Manifest returns the manifest of checkpoint id: an error wrapping
	// ErrNotFound if it is not complete, a *CorruptError if it is damaged.
	Manifest(ctx context.Context, id uint64) (Manifest, error)
	// Get returns instance's snapshot of checkpoint id, or a
	// *CorruptError if it is damaged or missing.
	Get(ctx context.Context, id uint64, instance string) ([]byte, error)
	// Prune keeps the keep newest complete checkpoints (at least one) and
	// removes every checkpoint older than them, complete or not. A
	// checkpoint newer than the newest complete one may be in progress and
	// is kept.
	Prune(ctx context.Context, keep int) error
}

// Partitioned is a Store that keeps apart the checkpoints of parts that
// checkpoint independently, each with ids of its own: the units of a
// pipeline run on several workers.
type Partitioned interface {
	Store
	// Partition returns the store of the part named name. Its
	// checkpoints are not the Store's own, nor another partition's.
	Partition(name string) (Store, error)
}

// Manifest is what makes a checkpoint complete.
type Manifest struct {
	// ID is the checkpoint's id; ids only grow.
	ID uint64
	// Instances names the instances whose snapshots the checkpoint holds.
	Instances []string
	// Data is the coordinator's: the sources' positions, the sinks'
	// commits.
	Data []byte
}

// Latest returns the manifest of the newest complete checkpoint of s, or
// ErrNotFound. It does not fall back: a damaged newest checkpoint gives its
// *CorruptError, and a caller that may restore an older one reads it from
// [Store.Checkpoints].
func Latest(ctx context.Context, s Store) (Manifest, error) {
	ids, err := s.Checkpoints(ctx)
	if err != nil {
		return Manifest{}, err
	}
	if len(ids) == 0 {
		return Manifest{}, ErrNotFound
	}
	m, err := s.Manifest(ctx, ids[0])
	if err != nil {
		return Manifest{}, fmt.Errorf("latest checkpoint: %w", err)
	}
	return m, nil
}
