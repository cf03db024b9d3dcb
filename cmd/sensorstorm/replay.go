package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	replaysrc "github.com/sensorstorm/sensorstorm/connectors/replay"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology"
)

// replayOptions are the parsed flags of replay.
type replayOptions struct {
	speed    replaysrc.Speed
	window   time.Duration
	late     syncbuffer.LatePolicy
	lateOut  string
	from, to instantFlag
	loop     bool
	concat   bool
	out      string
	control  string
	quiet    bool
	format   formatFlags
	files    []string
}

func replayFlags(stderr io.Writer) (*flag.FlagSet, *replayOptions) {
	o := &replayOptions{}
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.TextVar(&o.speed, "speed", replaysrc.DefaultSpeed, "replay `FACTOR` of the recorded pace, from 0.01 to 10000, or max for unpaced")
	fs.DurationVar(&o.window, "window", 0, "bounded out-of-orderness: how long particles wait for late ones")
	fs.TextVar(&o.late, "late", syncbuffer.LateDrop, "late particles: drop, side or pass")
	fs.StringVar(&o.lateOut, "late-out", "", "with -late side, append late particles to this `FILE` (- is stdout)")
	fs.Var(&o.from, "from", "replay records from this event `TIME` on: RFC 3339 or epoch nanoseconds")
	fs.Var(&o.to, "to", "replay records before this event `TIME`: RFC 3339 or epoch nanoseconds")
	fs.BoolVar(&o.loop, "loop", false, "replay again from the start until interrupted, moving event time forward by the span\n"+
		"of the recording plus its first gap at each pass")
	fs.BoolVar(&o.concat, "concat", false, "read the files one after the other instead of merging them by event time")
	fs.StringVar(&o.out, "out", "-", "append output to this `FILE`; - is stdout")
	fs.StringVar(&o.control, "control", "", "serve HTTP control on `ADDR` (such as localhost:8089): POST /speed?factor=F|max,\n"+
		"POST /pause, POST /resume, GET /status")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress bar and no keys, even on a terminal")
	o.format.register(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: sensorstorm replay [flags] FILE...

Replays recordings (line protocol, plain or gzip, or delimited text) merged
by event time, paced at -speed, and writes the particles as line protocol
in event-time order. It ends with this line on stderr:
  summary: read=N emitted=N late=N invalid=N
On a terminal it shows progress, and keys change the replay:
  + faster (x2), - slower (/2), space pause/resume, m max, 1 real time, q quit

Flags:
`)
		fs.PrintDefaults()
	}
	return fs, o
}

// parseReplay parses args, which may mix flags and files.
func parseReplay(args []string, stderr io.Writer) (*replayOptions, error) {
	fs, o := replayFlags(stderr)
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			break
		}
		o.files = append(o.files, fs.Arg(0))
		args = fs.Args()[1:]
	}
	o.format.recordSet(fs)
	if len(o.files) == 0 {
		fs.Usage()
		return nil, errors.New("no files to replay")
	}
	return o, nil
}

func replay(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseReplay(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	// fail reports err and returns code.
	fail := func(code int, err error) int {
		fmt.Fprintln(stderr, "sensorstorm:", err)
		return code
	}
	cfg := replaysrc.Config{Speed: o.speed, From: o.from.t, To: o.to.t, Loop: o.loop, Concat: o.concat}
	for _, path := range o.files {
		f, err := o.format.formatFor(path)
		if err != nil {
			return fail(exitUsage, err)
		}
		cfg.Inputs = append(cfg.Inputs, replaysrc.Input{Path: path, Format: &f})
	}
	src, err := replaysrc.New(cfg)
	if err != nil {
		return fail(exitUsage, err)
	}
	for _, path := range o.files {
		if _, err := os.Stat(path); err != nil {
			return fail(exitError, err)
		}
	}
	w, err := openOutput(o.out, stdout)
	if err != nil {
		return fail(exitError, err)
	}
	var lateW io.Writer
	if o.late == syncbuffer.LateSide && o.lateOut != "" {
		if lateW, err = openOutput(o.lateOut, stdout); err != nil {
			return fail(exitError, err)
		}
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	term := newTerminal(stderr, o.quiet)
	logger := slog.New(slog.NewTextHandler(term.logWriter(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	t, err := topology.New(topology.Config{
		Logger:      logger,
		DeadLetters: &deadLetterLog{logger: logger},
		Replay:      true,
	})
	if err != nil {
		return fail(exitError, err)
	}
	t.AddSource("replay", topology.Single(src), topology.SourceConfig{})
	t.AddBolt("out", operation.Stateless(file.NewSink(w, o.format.precision)), topology.BoltConfig{
		Buffer: syncbuffer.Config{Window: o.window, Late: o.late},
	}).Input("replay", topology.Global())
	if lateW != nil {
		t.AddBolt("late", operation.Stateless(file.NewSink(lateW, o.format.precision)), topology.BoltConfig{
			Buffer: syncbuffer.Config{Late: syncbuffer.LatePass},
		}).InputStream("out", topology.LateStream, topology.Global())
	}

	stopControl, err := serveControl(o.control, src, stderr)
	if err != nil {
		return fail(exitError, err)
	}
	stopUI := term.start(ctx, src, cancel)
	start := time.Now()
	runErr := t.Run(ctx)
	elapsed := time.Since(start)
	stopUI()
	stopControl()

	st := src.Status()
	dst := t.Stats("out")
	fmt.Fprintf(stderr, "replay: elapsed=%s skipped=%d outside=%d passes=%d\n",
		elapsed.Round(time.Millisecond), st.Skipped, st.Outside, st.Pass+1)
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		fmt.Fprintln(stderr, "sensorstorm:", runErr)
	}
	fmt.Fprintf(stderr, "summary: read=%d emitted=%d late=%d invalid=%d\n",
		st.Read, dst.Processed.Load()-lateProcessed(o.late, dst), dst.Late.Load(),
		t.Stats("replay").Invalid.Load()+dst.Invalid.Load())
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return exitError
	}
	return exitOK
}

// serveControl serves the HTTP control endpoint on addr, if not empty,
// and returns the function that stops it.
func serveControl(addr string, src *replaysrc.Source, stderr io.Writer) (func(), error) {
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("control: %w", err)
	}
	srv := &http.Server{Handler: replaysrc.Handler(src), ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Serve returns ErrServerClosed on Shutdown, the only way it ends.
		_ = srv.Serve(ln)
	}()
	fmt.Fprintf(stderr, "replay: control on http://%s (POST /speed?factor=F|max, /pause, /resume; GET /status)\n", ln.Addr())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}

// lateProcessed is how many of the processed particles were late ones
// passed through, which the summary counts as late, not emitted.
func lateProcessed(p syncbuffer.LatePolicy, s *topology.ComponentStats) uint64 {
	if p == syncbuffer.LatePass {
		return s.Late.Load()
	}
	return 0
}

// openOutput opens path for appending, creating it if missing; "-" is
// stdout, which is not closed.
func openOutput(path string, stdout io.Writer) (io.Writer, error) {
	if path == "-" || path == "" {
		return nopCloser{stdout}, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return f, nil
}

type nopCloser struct{ io.Writer }

// deadLetterLog logs dead letters: the command's dead-letter sink.
type deadLetterLog struct{ logger *slog.Logger }

func (d *deadLetterLog) DeadLetter(ctx context.Context, l topology.DeadLetter) {
	d.logger.WarnContext(ctx, "dead letter", "component", l.Component, "reason", l.Reason, "err", l.Err)
}
