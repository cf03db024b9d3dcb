package syncbuffer

import (
	"errors"

	"github.com/sensorstorm/sensorstorm/state"
)

// Snapshot writes the buffer's state to w: every item it holds, written by
// enc, each input's progress and end, what was released, and the meta
// identities it remembers.
func (b *Buffer[T]) Snapshot(w *state.Writer, enc func(w *state.Writer, item *T) error) error {
	return errors.New("syncbuffer: Snapshot: not built yet")
}

// Restore reads a state written by Snapshot into a buffer that has taken
// nothing yet, made with the same Config and number of inputs; dec reads
// one item written by Snapshot's enc.
func (b *Buffer[T]) Restore(r *state.Reader, dec func(r *state.Reader) (T, error)) error {
	return errors.New("syncbuffer: Restore: not built yet")
}
