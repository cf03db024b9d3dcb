// Package checkpointtest checks that an implementation of checkpoint.Store
// keeps the contract the run's coordinator relies on, as testing/fstest
// does for file systems: every Store of this module passes TestStore, and
// a new one (a database, an object store) should too.
//
// # What it is not
//
// Not a test of damage: how a Store detects a corrupt snapshot depends on
// where it keeps them; each Store's own tests damage its files.
package checkpointtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/sensorstorm/sensorstorm/checkpoint"
)

// instances names the instances of the checkpoints the suite writes:
// names with a separator, a space and two that differ in case only.
var instances = []string{"window/0", "window/1", "Source A", "source a"}

// snapshot is instance's snapshot of checkpoint id: the first instance's
// is larger than a megabyte, so that a Store that cuts snapshots into
// chunks or messages cuts it.
func snapshot(id uint64, instance string) []byte {
	n := 64
	if instance == instances[0] {
		n = 3 << 20 / 2
	}
	b := bytes.Repeat([]byte(instance), n/len(instance)+1)
	b[0] = byte(id)
	return b
}

// TestStore runs the contract's cases, each on a new empty Store that
// open returns. Close or remove it with t.Cleanup.
// A checkpoint.Partitioned Store's partitions keep the contract too, and
// are kept apart.
func TestStore(t *testing.T, open func(t *testing.T) checkpoint.Store) {
	testCases(t, open)
	if _, ok := open(t).(checkpoint.Partitioned); ok {
		t.Run("Partition", func(t *testing.T) {
			testCases(t, func(t *testing.T) checkpoint.Store { return partition(t, open(t), "unit/1") })
		})
		t.Run("PartitionsAreApart", func(t *testing.T) { testPartitionsApart(t, open(t).(checkpoint.Partitioned)) })
	}
}

// testCases runs the contract's cases.
func testCases(t *testing.T, open func(t *testing.T) checkpoint.Store) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, s checkpoint.Store)
	}{
		{"Empty", testEmpty},
		{"RoundTrip", testRoundTrip},
		{"IncompleteIsNotListed", testIncomplete},
		{"CommitRefusesMissingSnapshots", testCommitRefuses},
		{"CommitOnce", testCommitOnce},
		{"PruneKeepsTheNewest", testPrune},
		{"Names", testNames},
		{"Context", testContext},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, open(t)) })
	}
}

// partition returns s's partition name.
func partition(t *testing.T, s checkpoint.Store, name string) checkpoint.Store {
	t.Helper()
	p, err := s.(checkpoint.Partitioned).Partition(name)
	if err != nil {
		t.Fatalf("Partition(%q): %v", name, err)
	}
	return p
}

// testPartitionsApart checks that a partition's checkpoints are neither
// the store's nor another partition's, and that pruning one leaves the
// others be: names that differ in case or by a dot stay apart too.
func testPartitionsApart(t *testing.T, s checkpoint.Partitioned) {
	a, b, c := partition(t, s, "bolt/a.b/0"), partition(t, s, "bolt/a_b/0"), partition(t, s, "Bolt/a.b/0")
	write(t, s, 7, true)
	write(t, a, 1, true)
	write(t, a, 2, true)
	write(t, a, 3, true)
	write(t, b, 5, true)
	checkListed(t, s, 7)
	checkListed(t, a, 3, 2, 1)
	checkListed(t, b, 5)
	checkListed(t, c)
	if err := a.Prune(context.Background(), 1); err != nil {
		t.Fatalf("Prune: %v", err)
	}
	checkListed(t, a, 3)
	checkRestores(t, a, 3)
	checkRestores(t, b, 5)
	checkRestores(t, s, 7)
	if err := s.Prune(context.Background(), 1); err != nil {
		t.Fatalf("Prune: %v", err)
	}
	checkRestores(t, a, 3)
}

// write stores checkpoint id of instances and, if commit, its manifest.
func write(t *testing.T, s checkpoint.Store, id uint64, commit bool) {
	t.Helper()
	ctx := context.Background()
	for _, in := range instances {
		if err := s.Put(ctx, id, in, snapshot(id, in)); err != nil {
			t.Fatalf("Put(%d, %q): %v", id, in, err)
		}
	}
	if commit {
		if err := s.Commit(ctx, checkpoint.Manifest{ID: id, Instances: instances, Data: []byte{byte(id)}}); err != nil {
			t.Fatalf("Commit(%d): %v", id, err)
		}
	}
}

// checkListed checks that the complete checkpoints are want, newest first.
func checkListed(t *testing.T, s checkpoint.Store, want ...uint64) {
	t.Helper()
	ids, err := s.Checkpoints(context.Background())
	if err != nil {
		t.Fatalf("Checkpoints: %v", err)
	}
	if fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Fatalf("Checkpoints = %v, want %v", ids, want)
	}
}

// checkRestores checks that checkpoint id reads back as write wrote it.
func checkRestores(t *testing.T, s checkpoint.Store, id uint64) {
	t.Helper()
	ctx := context.Background()
	m, err := s.Manifest(ctx, id)
	if err != nil {
		t.Fatalf("Manifest(%d): %v", id, err)
	}
	if m.ID != id || fmt.Sprint(m.Instances) != fmt.Sprint(instances) || !bytes.Equal(m.Data, []byte{byte(id)}) {
		t.Fatalf("Manifest(%d) = %+v", id, m)
	}
	for _, in := range m.Instances {
		b, err := s.Get(ctx, id, in)
		if err != nil {
			t.Fatalf("Get(%d, %q): %v", id, in, err)
		}
		if !bytes.Equal(b, snapshot(id, in)) {
			t.Fatalf("Get(%d, %q): %d bytes, not the %d Put", id, in, len(b), len(snapshot(id, in)))
		}
	}
}

func testEmpty(t *testing.T, s checkpoint.Store) {
	checkListed(t, s)
	if _, err := checkpoint.Latest(context.Background(), s); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("Latest of an empty store: %v, want ErrNotFound", err)
	}
	if _, err := s.Manifest(context.Background(), 1); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("Manifest(1) of an empty store: %v, want ErrNotFound", err)
	}
}

func testRoundTrip(t *testing.T, s checkpoint.Store) {
	ctx := context.Background()
	write(t, s, 1, true)
	// A Put again before the commit replaces the snapshot.
	if err := s.Put(ctx, 2, instances[1], []byte("first try")); err != nil {
		t.Fatal(err)
	}
	write(t, s, 2, true)
	checkListed(t, s, 2, 1)
	m, err := checkpoint.Latest(ctx, s)
	if err != nil || m.ID != 2 {
		t.Fatalf("Latest = %+v, %v; want checkpoint 2", m, err)
	}
	checkRestores(t, s, 2)
	checkRestores(t, s, 1)
}

func testIncomplete(t *testing.T, s checkpoint.Store) {
	write(t, s, 1, true)
	write(t, s, 2, false)
	checkListed(t, s, 1)
	if _, err := s.Manifest(context.Background(), 2); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("Manifest of a checkpoint never committed: %v, want ErrNotFound", err)
	}
	write(t, s, 2, true)
	checkListed(t, s, 2, 1)
	checkRestores(t, s, 2)
}

func testCommitRefuses(t *testing.T, s checkpoint.Store) {
	ctx := context.Background()
	if err := s.Put(ctx, 1, "a", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, checkpoint.Manifest{ID: 1, Instances: []string{"a", "b"}}); err == nil {
		t.Fatal("Commit of a manifest listing a snapshot never Put succeeded")
	}
	checkListed(t, s)
}

func testCommitOnce(t *testing.T, s checkpoint.Store) {
	ctx := context.Background()
	write(t, s, 1, true)
	if err := s.Put(ctx, 1, "late", []byte("y")); err != nil {
		t.Fatal(err)
	}
	err := s.Commit(ctx, checkpoint.Manifest{ID: 1, Instances: []string{"late"}, Data: []byte{9}})
	if !errors.Is(err, checkpoint.ErrCommitted) {
		t.Fatalf("second Commit of checkpoint 1: %v, want ErrCommitted", err)
	}
	checkListed(t, s, 1)
	checkRestores(t, s, 1)
}

func testPrune(t *testing.T, s checkpoint.Store) {
	ctx := context.Background()
	write(t, s, 1, false) // never completed
	for id := uint64(2); id <= 5; id++ {
		write(t, s, id, true)
	}
	write(t, s, 6, false) // in progress
	if err := s.Prune(ctx, 2); err != nil {
		t.Fatalf("Prune: %v", err)
	}
	checkListed(t, s, 5, 4)
	checkRestores(t, s, 5)
	checkRestores(t, s, 4)
	for _, id := range []uint64{1, 2, 3} {
		if b, err := s.Get(ctx, id, instances[0]); err == nil {
			t.Fatalf("Get(%d) after Prune(2): %d bytes, want an error", id, len(b))
		}
	}
	// The checkpoint in progress survived: it completes.
	if err := s.Commit(ctx, checkpoint.Manifest{ID: 6, Instances: instances, Data: []byte{6}}); err != nil {
		t.Fatalf("Commit(6) after Prune: %v", err)
	}
	checkRestores(t, s, 6)
}

func testNames(t *testing.T, s checkpoint.Store) {
	ctx := context.Background()
	if err := s.Put(ctx, 1, "", nil); !errors.Is(err, checkpoint.ErrInvalidName) {
		t.Fatalf("Put of an empty name: %v, want ErrInvalidName", err)
	}
	if err := s.Put(ctx, 1, "empty", nil); err != nil {
		t.Fatalf("Put of an empty snapshot: %v", err)
	}
	if b, err := s.Get(ctx, 1, "empty"); err != nil || len(b) != 0 {
		t.Fatalf("Get of an empty snapshot = %q, %v", b, err)
	}
	var corrupt *checkpoint.CorruptError
	_, err := s.Get(ctx, 1, "never put")
	if !errors.As(err, &corrupt) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Get of a snapshot never Put: %v, want a *CorruptError wrapping fs.ErrNotExist", err)
	}
}

func testContext(t *testing.T, s checkpoint.Store) {
	write(t, s, 1, true)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Put(ctx, 2, "a", []byte("x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Put with a cancelled context: %v, want context.Canceled", err)
	}
	if _, err := s.Get(ctx, 1, instances[0]); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get with a cancelled context: %v, want context.Canceled", err)
	}
}
