package replay

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
)

// Defaults of Config.
const (
	// DefaultSpeed is the default Config.Speed: the recording's own pace.
	DefaultSpeed Speed = 1
	// MinLoopShift is the least a looping replay moves event time forward
	// from one pass to the next.
	MinLoopShift = time.Second
)

// Input is one recording.
type Input struct {
	// Path is the file, read through gzip if it ends in ".gz".
	Path string `yaml:"path"`
	// Format is the file's format. Defaults to file.Detect(Path).
	Format *file.Format `yaml:"format"`
	// Reader, if not nil, is read instead of the file, such as standard
	// input; Path then only names it in errors. It can be read once: a
	// Config with a Reader cannot Loop. Defaults to nil.
	Reader io.Reader `yaml:"-"`
}

// Config configures a Source.
type Config struct {
	// Inputs are the recordings. They are merged by event time into one
	// stream, unless Concat is set.
	Inputs []Input `yaml:"inputs"`
	// Speed is the replay speed at the start; SetSpeed changes it while
	// the replay runs. Defaults to DefaultSpeed.
	Speed Speed `yaml:"speed"`
	// From and To bound the records replayed to event times in [From, To):
	// records outside are read and counted, not emitted. Default to the
	// zero time, which leaves that end open.
	From time.Time `yaml:"from"`
	To   time.Time `yaml:"to"`
	// Loop replays the recordings again after the end, until the context
	// is cancelled. Each pass moves event time forward by the span of the
	// first (from its first record to its last) plus the first gap between
	// two of its records, at least MinLoopShift, so that event time keeps
	// increasing as if the recording went on. Defaults to false.
	Loop bool `yaml:"loop"`
	// Concat reads the inputs one after the other, in the order given,
	// instead of merging them by event time: records of a later file that
	// are older than those of an earlier one then arrive late downstream.
	// Defaults to false.
	Concat bool `yaml:"concat"`
	// FutureBound is how far a record's event time may jump ahead of the
	// newest one replayed before the record counts as a wild timestamp (a
	// sensor with a broken clock): rejected as invalid, never waited for,
	// never the stream's new high-water mark. A jump that the next record
	// confirms is a gap in the recording, replayed as it is. Negative
	// disables the check. Defaults to syncbuffer.DefaultFutureBound.
	FutureBound time.Duration `yaml:"future_bound"`
	// Wall is the wall clock that paces the replay. Defaults to
	// SystemWall.
	Wall Wall `yaml:"-"`
}

func (c *Config) setDefaults() {
	if c.Speed == 0 {
		c.Speed = DefaultSpeed
	}
	if c.Wall == nil {
		c.Wall = SystemWall{}
	}
	if c.FutureBound == 0 {
		c.FutureBound = syncbuffer.DefaultFutureBound
	}
	for i := range c.Inputs {
		if c.Inputs[i].Format == nil {
			f := file.Detect(c.Inputs[i].Path)
			c.Inputs[i].Format = &f
		}
	}
}

// Validate reports the problems of a Config after defaults.
func (c *Config) Validate() error {
	var errs []error
	if len(c.Inputs) == 0 {
		errs = append(errs, ErrNoInputs)
	}
	if err := c.Speed.Validate(); err != nil {
		errs = append(errs, err)
	}
	if !c.From.IsZero() && !c.To.IsZero() && !c.From.Before(c.To) {
		errs = append(errs, fmt.Errorf("%w: from %s is not before to %s", ErrInvalidConfig, c.From, c.To))
	}
	for _, in := range c.Inputs {
		if in.Path == "" {
			errs = append(errs, fmt.Errorf("%w: input without a path", ErrInvalidConfig))
			continue
		}
		if in.Reader != nil && c.Loop {
			errs = append(errs, fmt.Errorf("%w: %s is read once and cannot loop", ErrInvalidConfig, in.Path))
		}
		if in.Format != nil {
			if err := in.Format.Validate(); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", in.Path, err))
			}
		}
	}
	return errors.Join(errs...)
}
