package pipeline

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/sensorstorm/sensorstorm/acker"
	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/connectors/replay"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/streamclock"
	"github.com/sensorstorm/sensorstorm/topology"
)

// Options are what Build takes from its caller rather than from the file.
type Options struct {
	// Dir is the directory relative paths are resolved against. Defaults
	// to the current directory.
	Dir string
	// Stdout receives the output of sinks writing to "-". Defaults to
	// os.Stdout.
	Stdout io.Writer
	// Logger, Wall and DeadLetters are passed to the topology.
	Logger      *slog.Logger
	Wall        streamclock.Wall
	DeadLetters topology.DeadLetterSink
}

// setDefaults fills in what depends on the whole pipeline: see the
// package documentation.
func (p *Pipeline) setDefaults() {
	spans := map[string]time.Duration{}
	longest := time.Duration(0)
	for _, b := range p.Bolts {
		spans[b.Name] = b.span
		longest = max(longest, b.span)
	}
	unpaced := p.speed() == replay.Max
	for i := range p.Bolts {
		b := &p.Bolts[i]
		switch {
		case b.set["idle_timeout"]:
		case unpaced:
			// An unpaced clock is the highest event time seen: an input
			// merely slower than another would count as idle.
			b.Buffer.IdleTimeout = -1
		default:
			for _, in := range b.Inputs {
				switch s := spans[in.From]; {
				case s < 0:
					b.Buffer.IdleTimeout = -1
				case s > 0 && b.Buffer.IdleTimeout >= 0:
					b.Buffer.IdleTimeout = max(b.Buffer.IdleTimeout, 2*s+b.Buffer.Window)
				}
			}
		}
		if !b.set["future_bound"] && unpaced {
			b.Buffer.FutureBound = -1
		}
	}
	if p.Acking.Enabled && p.Acking.HardTimeout == 0 && longest > 0 {
		p.Acking.HardTimeout = max(acker.DefaultHardTimeout, 2*longest+time.Minute)
	}
}

// speed returns the replay speed of the file sources (they agree: Parse
// checks it), or 1 without any.
func (p *Pipeline) speed() replay.Speed {
	for _, s := range p.Sources {
		if s.File != nil {
			return s.File.Speed
		}
	}
	return 1
}

// Check reports files that cannot be read, with their place in the
// pipeline file; dir resolves relative paths.
func (p *Pipeline) Check(dir string) error {
	var errs []error
	for _, s := range p.Sources {
		if s.File == nil {
			continue
		}
		for _, path := range s.File.Paths {
			f, err := os.Open(resolve(dir, path))
			if err != nil {
				at := s.File.pos["paths"]
				errs = append(errs, &Error{File: p.File, Line: at.line, Column: at.col, Err: fmt.Errorf("source %q: %w", s.Name, err)})
				continue
			}
			f.Close()
		}
	}
	return errors.Join(errs...)
}

func resolve(dir, path string) string {
	if path == "-" || filepath.IsAbs(path) || dir == "" {
		return path
	}
	return filepath.Join(dir, path)
}

// Build checks the files and returns the topology of the pipeline, ready
// to Run. Sinks writing to files open them here; Run closes them.
func (p *Pipeline) Build(opts Options) (*topology.Topology, error) {
	if err := p.Check(opts.Dir); err != nil {
		return nil, err
	}
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	speed := p.speed()
	topo, err := topology.New(topology.Config{
		Clock:  topology.ClockConfig{Replay: true, Speed: float64(speed)},
		Acking: p.Acking, Logger: opts.Logger, Wall: opts.Wall, DeadLetters: opts.DeadLetters,
	})
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	for _, s := range p.Sources {
		cfg := replay.Config{Speed: s.File.Speed, Concat: len(s.File.Paths) == 1}
		for _, path := range s.File.Paths {
			cfg.Inputs = append(cfg.Inputs, replay.Input{Path: resolve(opts.Dir, path), Format: s.File.Format})
		}
		if _, err := replay.New(cfg); err != nil {
			return nil, &Error{File: p.File, Line: s.pos.line, Column: s.pos.col, Err: fmt.Errorf("source %q: %w", s.Name, err)}
		}
		topo.AddSource(s.Name, func(int) topology.Source {
			src, _ := replay.New(cfg)
			return src
		}, topology.SourceConfig{Parallelism: s.Parallelism})
	}
	var opened []io.Closer
	for _, b := range p.Bolts {
		f := b.factory
		if b.Sink != nil {
			w, c, err := openSink(resolve(opts.Dir, b.Sink.File), opts.Stdout)
			if err != nil {
				for _, c := range opened {
					c.Close()
				}
				return nil, &Error{File: p.File, Line: b.pos.line, Column: b.pos.col, Err: fmt.Errorf("bolt %q: %w", b.Name, err)}
			}
			if c != nil {
				opened = append(opened, c)
			}
			f = operation.Stateless(file.NewSink(w, b.Sink.Precision))
		}
		bolt := topo.AddBolt(b.Name, f, topology.BoltConfig{Parallelism: b.Parallelism, Buffer: b.Buffer})
		for _, in := range b.Inputs {
			bolt.InputStream(in.From, in.Stream, grouping(in))
		}
	}
	return topo, nil
}

// openSink opens a sink's output: standard output for "-" (not closed by
// the sink), else the file, created or truncated.
func openSink(path string, stdout io.Writer) (io.Writer, io.Closer, error) {
	if path == "-" {
		return struct{ io.Writer }{stdout}, nil, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	return f, f, nil
}

func grouping(in Input) topology.Grouping {
	switch in.Grouping {
	case "fields":
		return topology.Fields(in.Fields...)
	case "global":
		return topology.Global()
	case "all":
		return topology.All()
	}
	return topology.Shuffle()
}
