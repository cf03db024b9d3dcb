package pipeline

import (
	"errors"
	"fmt"
)

// ErrInvalid is wrapped by every problem Parse finds.
var ErrInvalid = errors.New("pipeline: invalid pipeline")

// Error is a problem at a place in a pipeline file.
type Error struct {
	// File is the file's name as given to Parse; empty for a pipeline
	// made in Go.
	File string
	// Line and Column are one-based; zero when unknown.
	Line, Column int
	// Err says what is wrong, naming the component.
	Err error
}

// Error implements error. A pipeline made in Go has no file: its
// errors name the component only.
func (e *Error) Error() string {
	if e.File == "" {
		return e.Err.Error()
	}
	return fmt.Sprintf("%s:%d:%d: %v", e.File, e.Line, e.Column, e.Err)
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// Is makes every Error match ErrInvalid.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// ErrCheckpointsInCluster refuses a checkpoint directory in a pipeline run
// by a cluster, which keeps its units' checkpoints in JetStream.
var ErrCheckpointsInCluster = errors.New("a cluster keeps its checkpoints in JetStream, not in a directory: remove checkpoints: dir (checkpoints: interval applies)")
