package cputime_test

import (
	"testing"

	"github.com/sensorstorm/sensorstorm/internal/cputime"
)

// TestProcess checks that the figure is read, counts the CPU time the
// process has used to get here, and does not go back.
func TestProcess(t *testing.T) {
	before, err := cputime.Process()
	if err != nil {
		t.Fatal(err)
	}
	after, err := cputime.Process()
	if err != nil {
		t.Fatal(err)
	}
	if before <= 0 || after < before {
		t.Errorf("CPU time read as %v, then %v", before, after)
	}
}
