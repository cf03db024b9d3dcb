package checkpoint_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/sensorstorm/sensorstorm/checkpoint"
)

func Example() {
	root, _ := os.MkdirTemp("", "checkpoints")
	defer os.RemoveAll(root)
	ctx := context.Background()
	store, err := checkpoint.OpenDir(root)
	if err != nil {
		fmt.Println(err)
		return
	}

	// Each instance stores its snapshot of checkpoint 1; the coordinator
	// then commits the checkpoint with the sources' positions.
	_ = store.Put(ctx, 1, "stats/0", []byte("state of stats/0"))
	_ = store.Put(ctx, 1, "stats/1", []byte("state of stats/1"))
	_ = store.Commit(ctx, checkpoint.Manifest{ID: 1, Instances: []string{"stats/0", "stats/1"}, Data: []byte("spool@42")})

	// Checkpoint 2 stops between its snapshots and its manifest.
	_ = store.Put(ctx, 2, "stats/0", []byte("newer state"))

	// At restore: the newest complete checkpoint, and its snapshots.
	m, err := checkpoint.Latest(ctx, store)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("checkpoint %d, sources at %s\n", m.ID, m.Data)
	for _, in := range m.Instances {
		b, err := store.Get(ctx, m.ID, in)
		var corrupt *checkpoint.CorruptError
		if errors.As(err, &corrupt) {
			fmt.Println("damaged:", corrupt.File) // fall back, if the sources can replay
			return
		}
		fmt.Printf("%s: %s\n", in, b)
	}
	// Output:
	// checkpoint 1, sources at spool@42
	// stats/0: state of stats/0
	// stats/1: state of stats/1
}
