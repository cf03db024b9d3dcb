package pipeline

import (
	"io"
	"slices"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/connectors/replay"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology"
)

// fileSourceType replays recordings (FileSource).
var fileSourceType = sourceType{
	decode: func(d *decoder, n *yaml.Node, what string, s *Source) { s.File = d.fileSource(n, what) },
	build: func(s *Source, env *buildEnv, _ *topology.SourceConfig) (topology.SourceFactory, error) {
		return fileSource(s, env.opts, env.built)
	},
}

// fileSinkType writes line protocol to a file, or to Options.Stdout for
// "-".
var fileSinkType = sinkType{
	decode: func(d *decoder, n *yaml.Node, what, _ string, _ *particle.Precision, s *Sink) {
		s.File, _ = d.str(n, what+": sink: file")
	},
	open: openFileSink,
}

// openFileSink returns the sink of s and what to close if the build fails:
// for "-" a sink on standard output (never closed), else a sink on the
// file, created, and truncated at its first write, or with Append added
// to after cutting a torn last line off, unless a restore from a
// checkpoint came first. On a cluster, it writes the file of this worker
// (workerPath) and appends to it: a worker started again under the same
// name goes on with its file, and no worker truncates another's.
func openFileSink(s *Sink, name string, opts Options) (operation.Operation, io.Closer, error) {
	path := resolve(opts.Dir, s.File)
	if path == "-" {
		return file.NewSink(opts.Stdout, s.Precision), nil, nil
	}
	cfg := file.SinkConfig{Precision: s.Precision, Append: s.Append, Logger: opts.Logger}
	if opts.Cluster != "" && opts.Worker != "" {
		path, cfg.Append, cfg.Adopt = workerPath(path, opts.Worker), true, true
		if opts.Logger != nil {
			opts.Logger.Info("file sink on a cluster: this worker appends to a file of its own", "component", name, "path", path)
		}
	}
	sink, err := file.OpenSink(path, cfg)
	if err != nil {
		return nil, nil, err
	}
	return sink, sink, nil
}

func (d *decoder) fileSource(n *yaml.Node, what string) *FileSource {
	m := d.mapping(n, what+": file", "paths", "format", "precision", "max_line_length", "speed", "from", "to", "loop", "concat", "future_bound")
	if m == nil {
		return nil
	}
	f := &FileSource{Speed: replay.Max, pos: map[string]pos{}}
	if v := m["paths"]; v == nil {
		d.fail(n, "%s: file: no paths", what)
	} else {
		f.Paths = d.strs(v, what+": file: paths")
		f.pos["paths"] = at(v)
	}
	if v := m["format"]; v != nil {
		if name, ok := d.str(v, what+": file: format"); ok {
			format, err := file.Preset(name)
			if err != nil {
				d.fail(v, "%s: %v", what, err)
			}
			f.Format = &format
		}
	}
	if v := m["precision"]; v != nil {
		prec, err := particle.ParsePrecision(v.Value)
		if err != nil {
			d.fail(v, "%s: file: precision: %v", what, err)
		}
		if f.Format == nil {
			f.Format = &file.Format{}
		}
		f.Format.Precision = prec
	}
	if v := m["max_line_length"]; v != nil {
		f.MaxLineLength = d.posInt(v, what+": file: max_line_length", particle.MaxMaxLineLength)
	}
	if v := m["speed"]; v != nil {
		sp, err := replay.ParseSpeed(v.Value)
		if err != nil {
			d.fail(v, "%s: file: speed: %v", what, err)
		} else {
			f.Speed = sp
		}
	}
	f.From = d.instant(m["from"], what+": file: from")
	f.To = d.instant(m["to"], what+": file: to")
	if !f.From.IsZero() && !f.To.IsZero() && !f.From.Before(f.To) {
		d.fail(m["to"], "%s: file: to %s is not after from %s", what, f.To.Format(time.RFC3339Nano), f.From.Format(time.RFC3339Nano))
	}
	if v := m["loop"]; v != nil {
		f.Loop = d.bool(v, what+": file: loop")
	}
	if v := m["concat"]; v != nil {
		f.Concat = d.bool(v, what+": file: concat")
	}
	if v := m["future_bound"]; v != nil {
		f.FutureBound = d.duration(v, what+": file: future_bound", true)
	}
	if f.Loop && slices.Contains(f.Paths, "-") {
		d.fail(m["loop"], "%s: file: loop cannot replay standard input (-) again", what)
	}
	return f
}

// instant parses a bound of a replayed range (replay.ParseInstant); n
// may be nil, for the zero time.
func (d *decoder) instant(n *yaml.Node, what string) time.Time {
	if n == nil {
		return time.Time{}
	}
	t, err := replay.ParseInstant(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil {
		d.fail(n, "%s: %v", what, err)
	}
	return t
}

// fileSource returns the factory of a source replaying recordings, whose
// instances it makes and keeps in built.
func fileSource(s *Source, opts Options, built *Built) (topology.SourceFactory, error) {
	f := s.File
	cfg := replay.Config{Speed: f.Speed, From: f.From, To: f.To, Loop: f.Loop, Concat: f.Concat || len(f.Paths) == 1, FutureBound: f.FutureBound}
	for i, path := range f.Paths {
		in := replay.Input{Path: resolve(opts.Dir, path), Format: f.Format}
		switch {
		case f.Formats != nil:
			in.Format = &f.Formats[i]
		case f.MaxLineLength != 0:
			format := file.Detect(in.Path)
			if f.Format != nil {
				format = *f.Format
			}
			format.MaxLineLength = f.MaxLineLength
			in.Format = &format
		}
		if path == "-" {
			in.Reader = opts.Stdin
		}
		cfg.Inputs = append(cfg.Inputs, in)
	}
	srcs := make([]*replay.Source, s.Parallelism)
	for i := range srcs {
		src, err := replay.New(cfg)
		if err != nil {
			return nil, err
		}
		srcs[i] = src
		built.addInstance(s.Name, i, src)
	}
	built.replays[s.Name] = srcs
	return func(i int) topology.Source { return srcs[i] }, nil
}
