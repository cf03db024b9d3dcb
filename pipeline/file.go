package pipeline

import (
	"io"

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
		return fileSource(s, env.opts.Dir, env.built)
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
// file, created, and truncated at its first write unless a restore from a
// checkpoint came first. On a cluster, it writes the file of this worker
// (workerPath) and appends to it: a worker started again under the same
// name goes on with its file, and no worker truncates another's.
func openFileSink(s *Sink, name string, opts Options) (operation.Operation, io.Closer, error) {
	path := resolve(opts.Dir, s.File)
	if path == "-" {
		return file.NewSink(opts.Stdout, s.Precision), nil, nil
	}
	cfg := file.SinkConfig{Precision: s.Precision}
	if opts.Cluster != "" && opts.Worker != "" {
		path, cfg.Append = workerPath(path, opts.Worker), true
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
	m := d.mapping(n, what+": file", "paths", "format", "precision", "max_line_length", "speed")
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
	return f
}

// fileSource returns the factory of a source replaying recordings, which
// keeps the sources it makes in built.
func fileSource(s *Source, dir string, built *Built) (topology.SourceFactory, error) {
	cfg := replay.Config{Speed: s.File.Speed, Concat: len(s.File.Paths) == 1}
	for _, path := range s.File.Paths {
		path = resolve(dir, path)
		format := s.File.Format
		if s.File.MaxLineLength != 0 {
			f := file.Detect(path)
			if format != nil {
				f = *format
			}
			f.MaxLineLength = s.File.MaxLineLength
			format = &f
		}
		cfg.Inputs = append(cfg.Inputs, replay.Input{Path: path, Format: format})
	}
	if _, err := replay.New(cfg); err != nil {
		return nil, err
	}
	return func(i int) topology.Source {
		src := accepted(replay.New(cfg))
		built.mu.Lock()
		built.replays[s.Name] = append(built.replays[s.Name], src)
		built.mu.Unlock()
		built.addInstance(s.Name, i, src)
		return src
	}, nil
}
