package storebench

import (
	"context"
	"encoding/binary"
	"fmt"
	"io/fs"
	"log"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/sensorstorm/sensorstorm/checkpoint"
	"github.com/sensorstorm/sensorstorm/state"
)

const states = 1_000_000

// windowStates returns the states of 1M keyed windows, as a window
// operation writes them, and each one's key (its group and window start)
// for the key-value stores.
func windowStates() (snapshot []byte, keys, values [][]byte) {
	var w state.Writer
	start := int64(1_764_979_200_000_000_000)
	for i := range states {
		at := w.Len()
		group := fmt.Sprintf("sensor-%07d", i)
		w.PutVarint(start)
		w.PutUvarint(600e9) // the window's length
		w.PutString(group)
		w.PutUvarint(uint64(600 + i%50))
		for _, x := range []float64{float64(i) * 1.5, 0.25, 18.0, 24.5} {
			w.PutFloat64(x)
		}
		keys = append(keys, binary.BigEndian.AppendUint64([]byte(group), uint64(start)))
		values = append(values, w.Bytes()[at:w.Len():w.Len()])
	}
	return w.Bytes(), keys, values
}

// store is one of the stores measured: write stores one checkpoint in dir
// durably; restore reads it back and returns the number of states.
type store struct {
	name    string
	write   func(dir string, snapshot []byte, keys, values [][]byte) error
	restore func(dir string) (int, error)
}

var stores = []store{
	{"dir", writeDir, restoreDir},
	{"bbolt", writeBolt, restoreBolt},
	{"pebble", writePebble, restorePebble},
}

func writeDir(dir string, snapshot []byte, _, _ [][]byte) error {
	d, err := checkpoint.OpenDir(dir)
	if err != nil {
		return err
	}
	ctx := context.Background()
	if err := d.Put(ctx, 1, "stats/0", snapshot); err != nil {
		return err
	}
	return d.Commit(ctx, checkpoint.Manifest{ID: 1, Instances: []string{"stats/0"}})
}

func restoreDir(dir string) (int, error) {
	d, err := checkpoint.OpenDir(dir)
	if err != nil {
		return 0, err
	}
	ctx := context.Background()
	m, err := checkpoint.Latest(ctx, d)
	if err != nil {
		return 0, err
	}
	b, err := d.Get(ctx, m.ID, m.Instances[0])
	if err != nil {
		return 0, err
	}
	r := state.NewReader(b)
	n := 0
	for ; r.Len() > 0 && r.Err() == nil; n++ {
		decode(r)
	}
	return n, r.Err()
}

// decode reads one window state, as every restore here does: the stores
// are compared on the same work.
func decode(r *state.Reader) {
	r.ReadVarint()
	r.ReadUvarint()
	r.ReadString()
	r.ReadUvarint()
	for range 4 {
		r.ReadFloat64()
	}
}

var bucket = []byte("checkpoint-1")

func writeBolt(dir string, _ []byte, keys, values [][]byte) error {
	db, err := bolt.Open(filepath.Join(dir, "bolt.db"), 0o644, nil)
	if err != nil {
		return err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket(bucket)
		if err != nil {
			return err
		}
		b.FillPercent = 1 // keys come in order
		for i, k := range keys {
			if err := b.Put(k, values[i]); err != nil {
				return err
			}
		}
		return nil
	})
	return closeWith(err, db.Close())
}

func restoreBolt(dir string) (int, error) {
	db, err := bolt.Open(filepath.Join(dir, "bolt.db"), 0o644, &bolt.Options{ReadOnly: true})
	if err != nil {
		return 0, err
	}
	n := 0
	err = db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucket).ForEach(func(_, v []byte) error {
			r := state.NewReader(v)
			decode(r)
			n++
			return r.Err()
		})
	})
	return n, closeWith(err, db.Close())
}

func writePebble(dir string, _ []byte, keys, values [][]byte) error {
	db, err := pebble.Open(dir, &pebble.Options{Logger: quiet{}})
	if err != nil {
		return err
	}
	batch := db.NewBatch()
	for i, k := range keys {
		if err := batch.Set(k, values[i], nil); err != nil {
			return closeWith(err, db.Close())
		}
	}
	err = batch.Commit(pebble.Sync)
	return closeWith(err, db.Close())
}

func restorePebble(dir string) (int, error) {
	db, err := pebble.Open(dir, &pebble.Options{Logger: quiet{}})
	if err != nil {
		return 0, err
	}
	it, err := db.NewIter(nil)
	if err != nil {
		return 0, closeWith(err, db.Close())
	}
	n := 0
	for it.First(); it.Valid(); it.Next() {
		r := state.NewReader(it.Value())
		if decode(r); r.Err() != nil {
			return 0, closeWith(r.Err(), db.Close())
		}
		n++
	}
	err = closeWith(it.Error(), it.Close())
	return n, closeWith(err, db.Close())
}

// quiet drops pebble's informational log lines (the WALs it replays).
type quiet struct{}

func (quiet) Infof(string, ...any)              {}
func (quiet) Errorf(format string, args ...any) { log.Printf(format, args...) }
func (quiet) Fatalf(format string, args ...any) { log.Fatalf(format, args...) }

func closeWith(err, closeErr error) error {
	if err != nil {
		return err
	}
	return closeErr
}

func diskBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		fi, err := e.Info()
		n += fi.Size()
		return err
	})
	return n, err
}

// BenchmarkCheckpoint writes one checkpoint of 1M window states to each
// store, fsync included, and restores it in a new handle on the store (the
// files are in the page cache: a restore after a reboot reads the disk).
func BenchmarkCheckpoint(b *testing.B) {
	snapshot, keys, values := windowStates()
	for _, s := range stores {
		b.Run("store="+s.name+"/write", func(b *testing.B) {
			var disk int64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				dir := b.TempDir()
				b.StartTimer()
				if err := s.write(dir, snapshot, keys, values); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				var err error
				if disk, err = diskBytes(dir); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.SetBytes(int64(len(snapshot)))
			b.ReportMetric(float64(disk), "B/disk")
			b.ReportMetric(float64(disk)/states, "B/state")
		})
		b.Run("store="+s.name+"/restore", func(b *testing.B) {
			dir := b.TempDir()
			if err := s.write(dir, snapshot, keys, values); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(snapshot)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				n, err := s.restore(dir)
				if err != nil {
					b.Fatal(err)
				}
				if n != states {
					b.Fatalf("%d states restored, want %d", n, states)
				}
			}
		})
	}
}
