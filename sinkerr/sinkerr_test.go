package sinkerr_test

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/sensorstorm/sensorstorm/sinkerr"
)

func TestWrapped(t *testing.T) {
	err := fmt.Errorf("publish: %w", fmt.Errorf("%w: %w", sinkerr.ErrDestination, fs.ErrClosed))
	if !errors.Is(err, sinkerr.ErrDestination) || !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("%v matches neither the sentinel nor its cause", err)
	}
	if errors.Is(errors.New("bad line"), sinkerr.ErrDestination) {
		t.Fatal("bad data taken for a destination failure")
	}
}
