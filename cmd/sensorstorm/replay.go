package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	replaysrc "github.com/sensorstorm/sensorstorm/connectors/replay"
	"github.com/sensorstorm/sensorstorm/httpguard"
	"github.com/sensorstorm/sensorstorm/pipeline"
	"github.com/sensorstorm/sensorstorm/statuspage"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology"
)

// replayOptions are the parsed flags of replay.
type replayOptions struct {
	speed      replaysrc.Speed
	window     time.Duration
	future     time.Duration
	late       syncbuffer.LatePolicy
	lateOut    string
	from, to   instantFlag
	loop       bool
	concat     bool
	out        string
	appendOut  bool
	influx     influxFlags
	control    string
	allowHosts stringsFlag
	deadLetter string
	quiet      bool
	status     statusFlags
	format     formatFlags
	files      []string
}

const replayUsage = `usage: sensorstorm replay [flags] FILE...

Replays recordings (line protocol, plain or gzip, or delimited text) merged
by event time, paced at --speed, and writes the particles as line protocol
in event-time order, to --out or to InfluxDB (--influx-out). FILE - is
standard input. It ends with this line on stderr, where read = emitted +
late + invalid + skipped + outside + duplicates and refused counts the
emitted particles dead-lettered as failed:
  summary: read=N emitted=N late=N invalid=N skipped=N outside=N duplicates=N refused=N
and exits 1 if every record read was invalid. Stopped early (q, Ctrl-C),
it writes what its buffer holds and leaves the records read ahead but not
replayed out of the summary, counted apart:
  replay stopped early: position=TIME unreplayed=N
With --log-format json these lines are JSON records too. On a terminal it shows
progress, and keys change the replay:
  + faster (x2), - slower (/2), space pause/resume, m max, 1 real time, q quit
`

func replayFlags(stderr io.Writer) (*cli, *replayOptions) {
	o := &replayOptions{}
	c := newCLI("replay", replayUsage, stderr)
	fs := c.fs
	fs.TextVar(&o.speed, "speed", replaysrc.DefaultSpeed, "replay `FACTOR` of the recorded pace, from 0.01 to 10000, or max for unpaced")
	durationVar(fs, &o.window, "window", 0, "bounded out-of-orderness: how long particles wait for late ones, a `DURATION` such as 2s")
	durationVar(fs, &o.future, "future-bound", syncbuffer.DefaultFutureBound, "how far a record may jump ahead of the newest one replayed before it is a wild timestamp, unless the next record confirms the gap (a `DURATION`; negative: no check)")
	fs.TextVar(&o.late, "late", syncbuffer.LateDrop, "late particles: drop, side (needs --late-out) or pass")
	fs.StringVar(&o.lateOut, "late-out", "", "with --late side, write late particles to this `FILE` (- is stdout)")
	fs.Var(&o.from, "from", "replay records from this event `TIME` on: RFC 3339 or epoch nanoseconds")
	fs.Var(&o.to, "to", "replay records before this event `TIME`: RFC 3339 or epoch nanoseconds")
	fs.BoolVar(&o.loop, "loop", false, "replay again from the start until interrupted, moving event time forward by the span\n"+
		"of the recording plus its first gap at each pass")
	fs.BoolVar(&o.concat, "concat", false, "read the files one after the other instead of merging them by event time")
	fs.StringVar(&o.out, "out", "-", "write output to this `FILE`, replacing it (see --append); - is stdout")
	fs.BoolVar(&o.appendOut, "append", false, "add to the end of --out and --late-out files instead of replacing them")
	o.influx.register(fs)
	fs.StringVar(&o.control, "control", "", "serve HTTP control on `ADDR`, such as localhost:8089: POST /speed?factor=F|max,\n"+
		"POST /pause, POST /resume, GET /status"+addrUsage)
	fs.Var(&o.allowHosts, "allow-host", "also take --control and --http-control requests addressed to this host `NAME`, such as\n"+
		"replay.example.net (repeatable); IP addresses and localhost always work, other names are refused\n"+
		"against DNS rebinding")
	registerDeadLetter(fs, &o.deadLetter)
	fs.BoolVar(&o.quiet, "quiet", false, "no progress bar and no keys, even on a terminal")
	o.status.register(fs, true)
	o.format.register(fs)
	return c, o
}

// parseReplay parses args, which may mix flags and files. If it returns
// false, replay returns code.
func parseReplay(args []string, stdout, stderr io.Writer) (*cli, *replayOptions, int, bool) {
	c, o := replayFlags(stderr)
	files, code, ok := c.parse(args, stdout)
	if !ok {
		return nil, nil, code, false
	}
	o.files = files
	o.format.recordSet(c.fs)
	switch {
	case len(o.files) == 0:
		return nil, nil, c.usageError("no files to replay"), false
	case o.late == syncbuffer.LateSide && o.lateOut == "":
		return nil, nil, c.usageError("--late side needs --late-out FILE"), false
	case o.late != syncbuffer.LateSide && o.lateOut != "":
		return nil, nil, c.usageError("--late-out needs --late side"), false
	case o.loop && slices.Contains(o.files, "-"):
		return nil, nil, c.usageError("--loop cannot replay standard input again"), false
	}
	if o.control != "" {
		addr, err := listenAddr(o.control)
		if err != nil {
			return nil, nil, c.usageError("--control: %v", err), false
		}
		o.control = addr
	}
	if code, ok := o.status.check(c); !ok {
		return nil, nil, code, false
	}
	if code := o.influx.check(c, o.format.precision); code != 0 {
		return nil, nil, code, false
	}
	return c, o, exitOK, true
}

func replay(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c, o, code, ok := parseReplay(args, stdout, stderr)
	if !ok {
		return code
	}
	// fail reports err and returns code.
	fail := func(code int, err error) int {
		fmt.Fprintln(stderr, "sensorstorm:", err)
		return code
	}
	formats := make([]file.Format, len(o.files))
	for i, path := range o.files {
		f, err := o.format.formatFor(path)
		if err != nil {
			return c.usageError("%v", err)
		}
		formats[i] = f
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	term := newTerminal(stderr, o.quiet, slices.Contains(o.files, "-"))
	logger, logs := c.log.logger(term.logWriter())
	report := c.log.reporter(term.logWriter())

	ctx, stopDead := context.WithCancelCause(ctx)
	defer stopDead(nil)
	dead, err := openDeadLetters(o.deadLetter, logger, stopDead)
	if err != nil {
		return fail(exitError, err)
	}
	tap := o.status.tap()
	t, err := o.pipeline(formats, logger).Build(pipeline.Options{
		Stdin: stdin, Stdout: stdout, Logger: logger, DeadLetters: tap.DeadLetters(dead), WrapSource: tap.Source,
	})
	if err != nil {
		dead.Close()
		if buildUsage(err) {
			return c.usageError("%v", err)
		}
		return fail(exitError, err)
	}
	src := t.Instances("replay")[0].(*replaysrc.Source)

	control := httpguard.Protect(replaysrc.Handler(src), o.allowHosts...)
	stopControl, err := serveControl(o.control, control, report, logger)
	if err != nil {
		return fail(exitError, err)
	}
	page := statuspage.Config{Topology: t, Title: "replay " + strings.Join(o.files, " "), Tap: tap, Replay: pageReplay(src), Logger: logger}
	if o.status.control {
		page.Control = control
	}
	stopStatus, err := serveStatus(o.status.addr, page, func(url string) { report.prose("replay: status page on " + url) })
	if err != nil {
		stopControl()
		return fail(exitError, err)
	}
	stopUI := term.start(ctx, src, cancel)
	start := time.Now()
	runErr := t.Run(ctx)
	elapsed := time.Since(start)
	stopUI()
	stopStatus()
	stopControl()
	runErr = errors.Join(runErr, dead.Close())
	logs.Summarize(ctx)

	st := src.Status()
	report.line("replay", slog.Duration("elapsed", elapsed.Round(time.Millisecond)), slog.Int("passes", st.Pass+1))
	code = exitOK
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		report.fail(runErr)
		code = exitError
	}
	sum := summary{Read: st.Read, Invalid: st.Invalid, Skipped: st.Skipped, Outside: st.Outside}
	if ahead := unreplayed(st); ahead > 0 {
		// Stopped early (q, Ctrl-C): the source had read records that were
		// waiting for their time. They were never replayed, so the summary
		// leaves them out and says so, and still adds up.
		sum.Read -= ahead
		report.line("replay stopped early", slog.String("position", st.Position.UTC().Format(time.RFC3339Nano)), slog.Uint64("unreplayed", ahead))
	}
	sum.addBolt(st.Emitted, t.Stats("out"))
	sum.addRefused(t.Stats, t.Components())
	return sum.write(report, code)
}

// pipeline returns the topology of a replay: the files, merged, into a
// sink, with a second for late particles if they go aside.
func (o *replayOptions) pipeline(formats []file.Format, logger *slog.Logger) *pipeline.Pipeline {
	p := &pipeline.Pipeline{
		Sources: []pipeline.Source{{Name: "replay", Type: "file", File: &pipeline.FileSource{
			Paths: o.files, Formats: formats, Speed: o.speed, From: o.from.t, To: o.to.t, Loop: o.loop, Concat: o.concat, FutureBound: o.future,
		}}},
		Bolts: []pipeline.Bolt{{
			Name: "out", Inputs: []pipeline.Input{{From: "replay", Grouping: "global"}},
			Buffer: syncbuffer.Config{Window: o.window, Late: o.late},
			Sink:   o.influx.output(o.out, o.appendOut, o.format.precision, logger),
		}},
	}
	if o.late == syncbuffer.LateSide {
		p.Bolts = append(p.Bolts, pipeline.Bolt{
			Name: "late", Inputs: []pipeline.Input{{From: "out", Stream: topology.LateStream, Grouping: "global"}},
			Buffer: syncbuffer.Config{Late: syncbuffer.LatePass},
			Sink:   &pipeline.Sink{Type: "file", File: o.lateOut, Append: o.appendOut, Precision: o.format.precision},
		})
	}
	return p
}

// buildUsage tells whether err, of Pipeline.Build, is the flags' fault
// (a configuration a source refused) rather than a file's.
func buildUsage(err error) bool {
	_, ok := errors.AsType[*fs.PathError](err)
	return !ok
}

// unreplayed returns how many records the replay read but neither emitted
// nor set aside: those read ahead of a replay stopped early.
func unreplayed(st replaysrc.Status) uint64 {
	return st.Read - min(st.Read, st.Emitted+st.Invalid+st.Skipped+st.Outside)
}

// serveControl serves the HTTP control endpoint h on addr, if not empty,
// and returns the function that stops it.
func serveControl(addr string, h http.Handler, report reporter, logger *slog.Logger) (func(), error) {
	if addr == "" {
		return func() {}, nil
	}
	bound, stop, err := serveHTTP(addr, "control", h, logger)
	if err != nil {
		return nil, fmt.Errorf("control: %w", err)
	}
	report.prose(fmt.Sprintf("replay: control on http://%s (POST /speed?factor=F|max, /pause, /resume; GET /status)", bound))
	return stop, nil
}
