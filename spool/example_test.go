package spool_test

import (
	"fmt"
	"os"

	"github.com/sensorstorm/sensorstorm/spool"
)

func Example() {
	dir, _ := os.MkdirTemp("", "spool")
	defer os.RemoveAll(dir)

	s, _ := spool.Open(dir, spool.Config{})
	a, _ := s.Append([]byte("reading a"))
	b, _ := s.Append([]byte("reading b"))
	_ = s.Sync() // both durable: acknowledge them upstream now
	s.Complete(a)
	_ = s.Sync()
	_ = b // the process dies before b is processed

	// A restart hands out what was not completed.
	s.Close()
	s, _ = spool.Open(dir, spool.Config{})
	_ = s.Pending(func(seq uint64, data []byte) error {
		fmt.Printf("replay %d: %s\n", seq, data)
		return nil
	})
	s.Close()
	// Output:
	// replay 2: reading b
}
