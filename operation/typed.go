package operation

import (
	"context"
	"fmt"

	"github.com/sensorstorm/sensorstorm/particle"
)

// Typed returns an operation on values of type T: decode turns each input
// into a T, fn processes it and emits Ts, encode turns them back into
// particles. Nothing is reflected at run time; decode and encode are plain
// functions, typically a few lines of Field lookups. A decode error fails
// the input with an error wrapping [ErrDecode].
//
// An emitted particle whose Time is zero gets the input's time.
func Typed[T any](decode func(particle.Particle) (T, error), encode func(T) particle.Particle,
	fn func(ctx context.Context, in T, emit func(T)) error,
) Operation {
	return Func(func(ctx context.Context, in particle.Particle, out Emitter) error {
		v, err := decode(in)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrDecode, err)
		}
		return fn(ctx, v, func(r T) {
			p := encode(r)
			if p.Time == 0 {
				p.Time = in.Time
			}
			out.Emit(p)
		})
	})
}

// TypedBatch returns a window operation on values of type T: decode turns
// each input into a T as it arrives, fn receives the Ts of each complete
// window and group in event-time order and emits results of type R, which
// encode turns into particles. An emitted particle whose Time is zero gets
// the window's End. See [Aggregate] for how windows close.
func TypedBatch[T, R any](b Batcher, key KeyFunc, decode func(particle.Particle) (T, error), encode func(R) particle.Particle,
	fn func(ctx context.Context, w Window, key string, batch []T, emit func(R)) error,
) *Windowed[[]T] {
	return Aggregate(b, key, typedBatch[T, R]{decode: decode, encode: encode, fn: fn})
}

type typedBatch[T, R any] struct {
	decode func(particle.Particle) (T, error)
	encode func(R) particle.Particle
	fn     func(ctx context.Context, w Window, key string, batch []T, emit func(R)) error
}

func (typedBatch[T, R]) New() []T { return nil }

func (t typedBatch[T, R]) Add(acc []T, p *particle.Particle) ([]T, error) {
	v, err := t.decode(*p)
	if err != nil {
		return acc, fmt.Errorf("%w: %w", ErrDecode, err)
	}
	return append(acc, v), nil
}

func (t typedBatch[T, R]) Result(ctx context.Context, w Window, key string, acc []T, out Emitter) error {
	return t.fn(ctx, w, key, acc, func(r R) {
		p := t.encode(r)
		if p.Time == 0 {
			p.Time = w.End
		}
		out.Emit(p)
	})
}
