package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/connectors/httpwrite"
	"github.com/sensorstorm/sensorstorm/connectors/mqtt"
	"github.com/sensorstorm/sensorstorm/metrics"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/pipeline"
	"github.com/sensorstorm/sensorstorm/spool"
	"github.com/sensorstorm/sensorstorm/statuspage"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
)

// stringsFlag is a flag that may be given several times.
type stringsFlag []string

func (s *stringsFlag) String() string     { return strings.Join(*s, ",") }
func (s *stringsFlag) Set(v string) error { *s = append(*s, v); return nil }

// ingestFlags are the flags of ingest.
type ingestFlags struct {
	src        mqtt.Config
	http       httpwrite.Config // on when http.Addr is set
	window     time.Duration
	idle       time.Duration
	late       syncbuffer.LatePolicy
	out        string
	appendOut  bool
	influx     influxFlags
	publish    string
	record     string
	deadLetter string
	status     statusFlags
}

const ingestUsage = `usage: sensorstorm ingest --broker URL --topic FILTER [--topic FILTER ...] [flags]
       sensorstorm ingest --http-write ADDR [flags]

Subscribes to MQTT topics, or serves InfluxDB's write API (POST
/api/v2/write and /write) on --http-write, or both, aligns the readings in
a synchronization buffer and writes them as line protocol to --out
(replacing the file; --append adds to it, as a restart should), or to
InfluxDB (--influx-out).
SIGINT or SIGTERM drains and stops; the last line on stderr is
  summary: read=N emitted=N late=N invalid=N skipped=N outside=N duplicates=N refused=N
where read = emitted + late + invalid + skipped + outside + duplicates, and
refused counts the emitted readings dead-lettered as failed.
`

func (f *ingestFlags) register(fs *flag.FlagSet) {
	c := &f.src
	fs.Func("broker", "broker URL, e.g. tcp://localhost:1883 or ssl://host:8883 (repeatable)", func(v string) error {
		c.Brokers = append(c.Brokers, v)
		return nil
	})
	fs.Var((*stringsFlag)(&c.Topics), "topic", "topic filter to subscribe to, e.g. sensors/# or $share/group/sensors/# (repeatable)")
	fs.StringVar(&c.ClientID, "client-id", mqtt.DefaultClientID("sensorstorm"), "MQTT client id: keep it across restarts, differ between instances")
	fs.TextVar(&c.QoS, "qos", mqtt.DefaultQoS, "QoS of the subscriptions: 0, 1 or 2")
	fs.TextVar(&c.Mode, "mode", mqtt.DefaultMode, "when a message is acknowledged to the broker: spool, tree or receipt")
	fs.StringVar(&c.StateDir, "state-dir", "./sensorstorm-state", "directory for what must survive a restart (the spools, the subscriptions)")
	fs.StringVar(&f.http.Addr, "http-write", "", "serve InfluxDB's write API (POST /api/v2/write, /write; GET /ping, /health) on this `ADDR`, alone or with --broker"+addrUsage)
	fs.StringVar(&f.http.Token, "http-token", "", "token --http-write requires (Authorization: Token ...) (default: $SENSORSTORM_HTTP_TOKEN; none: no authentication)")
	fs.Int64Var(&f.http.MaxBodySize, "http-max-body", httpwrite.DefaultMaxBodySize, "largest --http-write body in bytes, after gzip decompression; larger ones get 413")
	fs.BoolVar(&c.Spool.Repair, "spool-repair", false, "start even if the spool is damaged: cut out the damage, report the messages lost and go on with the rest")
	fs.TextVar(&c.Payload.Format, "format", mqtt.FormatLineProtocol, "payload format: lp or json")
	fs.TextVar(&c.Payload.Precision, "precision", particle.Nanosecond, "timestamp precision of line-protocol payloads and the output: ns, us, ms or s")
	fs.StringVar(&c.Payload.TopicTags, "topic-tags", "", "template turning topic segments into tags, e.g. sensors/{room}/{sensor}")
	fs.StringVar(&c.Payload.JSON.TimeField, "json-time-field", mqtt.DefaultJSONTimeField, "JSON member holding the timestamp")
	fs.StringVar(&c.Payload.JSON.TimeFormat, "json-time-format", mqtt.DefaultJSONTimeFormat, "JSON timestamp format: rfc3339, unix, unix_ms, unix_us, unix_ns or a Go layout")
	fs.StringVar(&c.Payload.JSON.MeasurementField, "json-measurement-field", "", "JSON member naming the measurement (default: the topic's last segment)")
	fs.Var((*stringsFlag)(&c.Payload.JSON.TagFields), "json-tag", "JSON member that becomes a tag (repeatable)")
	fs.StringVar(&c.Username, "username", "", "MQTT username")
	fs.StringVar(&c.Password, "password", "", "MQTT password (default: $SENSORSTORM_MQTT_PASSWORD)")
	fs.StringVar(&c.TLS.CAFile, "tls-ca", "", "PEM file of the certificate authorities to trust")
	fs.StringVar(&c.TLS.CertFile, "tls-cert", "", "PEM file of the client certificate")
	fs.StringVar(&c.TLS.KeyFile, "tls-key", "", "PEM file of the client key")
	fs.BoolVar(&c.TLS.InsecureSkipVerify, "tls-insecure", false, "accept any broker certificate (tests only)")
	durationVar(fs, &c.KeepAlive, "keepalive", mqtt.DefaultKeepAlive, "keepalive interval")
	durationVar(fs, &c.MaxReconnectInterval, "max-reconnect-interval", mqtt.DefaultMaxReconnectInterval, "longest wait between connection attempts, which start 1s apart and double, a `DURATION` such as 30s")
	fs.IntVar(&c.MaxTakeovers, "max-takeovers", 0, "stop after this many connections in a row lost soon after connecting, the sign of another client with the same client id (0: only log them)")
	fs.IntVar(&c.MaxPayload, "max-payload", mqtt.DefaultMaxPayload, "largest payload in bytes; larger messages are dead-lettered")
	durationVar(fs, &f.window, "window", time.Second, "bounded out-of-orderness: how long particles wait for late ones, a `DURATION` such as 2s")
	durationVar(fs, &f.idle, "idle-timeout", 0, "how long a quiet input may send nothing before the others no longer wait for it, a `DURATION`;\n"+
		"a lone reading comes out within about window + idle timeout (default: the window, at least 2s and at most 30s)")
	// After a crash, messages the broker sends again can be older than
	// what the spool's replay already released: dropping them as late
	// would lose them.
	f.late = syncbuffer.LatePass
	fs.TextVar(&f.late, "late", syncbuffer.LatePass, "late particles: pass (written out of order) or drop; pass by default, unlike replay,\n"+
		"because a broker's redeliveries after a crash can be older than what was already written")
	fs.StringVar(&f.out, "out", "-", "write line protocol to this `FILE`, replacing it (see --append); - is stdout")
	fs.BoolVar(&f.appendOut, "append", false, "add to the end of --out instead of replacing it, as a restart after a crash should")
	f.influx.register(fs)
	fs.StringVar(&f.publish, "publish", "", "also publish results to this topic template, e.g. results/{sensor}")
	fs.StringVar(&f.record, "record", "", "also record everything that came in to DIR/ingest-<start time>.lp, for sensorstorm replay")
	registerDeadLetter(fs, &f.deadLetter)
	f.status.register(fs, false)
}

func ingest(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("ingest", ingestUsage, stderr)
	var f ingestFlags
	f.register(c.fs)
	rest, code, ok := c.parse(args, stdout)
	if !ok {
		return code
	}
	if len(rest) > 0 {
		return c.usageError("no arguments expected, got %q", rest)
	}
	if f.http.Addr == "" || c.missing("broker") == "" || c.missing("topic") == "" {
		if name := c.missing("broker", "topic"); name != "" {
			return c.usageError("missing required flag --%s (or serve --http-write alone)", name)
		}
	}
	if f.http.Addr != "" {
		addr, err := listenAddr(f.http.Addr)
		if err != nil {
			return c.usageError("--http-write: %v", err)
		}
		f.http.Addr = addr
	}
	if code, ok := f.status.check(c); !ok {
		return code
	}
	if code := f.influx.check(c, f.src.Payload.Precision); code != 0 {
		return code
	}
	if f.http.Token == "" {
		f.http.Token = os.Getenv("SENSORSTORM_HTTP_TOKEN")
	}
	logger, logs := c.log.logger(stderr)
	report := c.log.reporter(stderr)
	code, err := runIngest(ctx, &f, stdout, stderr, logger, report)
	logs.Summarize(ctx)
	if err != nil {
		report.fail(err)
	}
	return code
}

// unwrittenAdvice says what becomes of the readings ingest stopped
// without writing, whose messages it did not acknowledge.
func unwrittenAdvice(f *ingestFlags) string {
	var where []string
	if len(f.src.Brokers) > 0 {
		switch f.src.Mode {
		case mqtt.ModeSpool:
			where = append(where, "their MQTT messages stay in the spool in "+f.src.StateDir+" for the next start")
		case mqtt.ModeTree:
			where = append(where, "the broker delivers their MQTT messages again at the next start")
		default:
			where = append(where, "their MQTT messages were acknowledged on receipt (--mode receipt): lost")
		}
	}
	if f.http.Addr != "" {
		where = append(where, "their HTTP writes stay in the spool in "+f.http.StateDir+" for the next start")
	}
	return "readings not written: " + strings.Join(where, "; ")
}

func runIngest(ctx context.Context, f *ingestFlags, stdout, stderr io.Writer, logger *slog.Logger, report reporter) (int, error) {
	// A connection refused for good, by the source or the publishing
	// sink, stops the run with its error.
	ctx, giveUp := context.WithCancelCause(ctx)
	defer giveUp(nil)
	if f.publish != "" && len(f.src.Brokers) == 0 {
		return exitUsage, errors.New("--publish needs --broker")
	}
	if f.http.Addr != "" {
		// A spool of its own: a directory belongs to one spool.
		f.http.StateDir = filepath.Join(f.src.StateDir, "http")
		f.http.Spool.Repair = f.src.Spool.Repair
	}
	if st, err := os.Stat(f.out); err == nil && st.Mode().IsRegular() && st.Size() > 0 && !f.appendOut && f.influx.url == "" {
		// A restart without --append would lose what an earlier run
		// wrote and acknowledged: say so where it shows.
		logger.Warn("replacing the output of an earlier run; --append adds to it instead", "out", f.out, "bytes", st.Size())
	}
	var record string
	if f.record != "" {
		if err := os.MkdirAll(f.record, 0o755); err != nil {
			return exitError, err
		}
		record = filepath.Join(f.record, "ingest-"+time.Now().UTC().Format("20060102T150405Z")+".lp")
	}
	dead, err := openDeadLetters(f.deadLetter, logger, giveUp)
	if err != nil {
		return exitError, err
	}
	tap := f.status.tap()
	p := f.pipeline(record, logger, giveUp)
	t, err := p.Build(pipeline.Options{Stdout: stdout, Logger: logger, DeadLetters: tap.DeadLetters(dead), WrapSource: tap.Source})
	if err != nil {
		dead.Close()
		if buildUsage(err) {
			return exitUsage, err
		}
		return exitError, err
	}
	var src *mqtt.Source
	if inst := t.Instances("mqtt"); len(inst) > 0 {
		src = inst[0].(*mqtt.Source)
	}
	var hsrc *httpwrite.Source
	if inst := t.Instances("http"); len(inst) > 0 {
		hsrc = inst[0].(*httpwrite.Source)
	}
	out := t.Instances("out")[0]
	backlogs := pipelineBacklogs(p, t)
	page := statuspage.Config{Topology: t, Title: strings.Join(append([]string{"ingest"}, f.src.Topics...), " "), Tap: tap, Logger: logger,
		Metrics: metricsRegistry(t, metrics.NewBacklogs(backlogs, nil)), Instances: t.Instances}
	stopStatus, err := serveStatus(f.status.addr, page, func(url string) { logger.Info("serving the status page", "url", url) })
	if err != nil {
		return exitError, err
	}
	start := time.Now()
	runErr := t.Run(ctx)
	stopStatus()
	closeErrs := []error{runErr, dead.Close()}
	elapsed := time.Since(start).Round(time.Millisecond)
	var sum summary
	var emitted uint64
	if src != nil {
		st := src.Stats()
		attrs := []slog.Attr{slog.Uint64("messages", st.Received.Load()), slog.Uint64("written", written(out)),
			slog.Uint64("recovered", st.Recovered.Load()), slog.Uint64("redelivered", st.Redelivered.Load()), slog.Uint64("copies", st.Copies.Load()),
			slog.Uint64("acked", st.Acked.Load()), slog.Uint64("failed", st.Failed.Load()),
			slog.Int64("reconnects", max(int64(st.Connects.Load())-1, 0))}
		attrs = append(attrs, backlogAttrs(backlogs["mqtt"])...)
		report.line("ingest", append(attrs, slog.Duration("elapsed", elapsed))...)
		writeBacklogKept(report, "ingest: mqtt", backlogs["mqtt"], f.src.StateDir)
	}
	if hsrc != nil {
		st := hsrc.Stats()
		attrs := []slog.Attr{slog.Uint64("requests", st.Requests.Load()), slog.Uint64("accepted", st.Accepted.Load()),
			slog.Uint64("bytes", st.Bytes.Load()), slog.Uint64("points", st.Emitted.Load()), slog.Uint64("invalid", st.Invalid.Load()),
			slog.Uint64("recovered", st.Recovered.Load()),
			slog.Uint64("refused", st.BadRequests.Load()+st.Unauthorized.Load()+st.TooLarge.Load()+st.Unavailable.Load()),
			slog.Uint64("written", written(out))}
		attrs = append(attrs, backlogAttrs(backlogs["http"])...)
		report.line("ingest: http", append(attrs, slog.Duration("elapsed", elapsed))...)
		writeBacklogKept(report, "ingest: http", backlogs["http"], f.http.StateDir)
	}
	for _, in := range p.Sources {
		// The engine's count: it rejects particles beyond the future bound
		// that the source counted as emitted.
		emitted += sum.addSource(t.Stats(in.Name))
	}
	sum.addRefused(t.Stats, t.Components())
	code := exitOK
	err = errors.Join(closeErrs...)
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	var refused *mqtt.ConnectError
	if cause := context.Cause(ctx); errors.As(cause, &refused) {
		err = cause
	}
	if we, ok := errors.AsType[*file.WriteError](err); ok && we.Unwritten > 0 {
		err = fmt.Errorf("%w\n%s", err, unwrittenAdvice(f))
	}
	if _, ok := errors.AsType[*spool.CorruptError](err); ok {
		err = fmt.Errorf("%w\nthe spool in %s is damaged; start with --spool-repair to go on without the messages lost", err, f.src.StateDir)
	}
	if err == nil && src != nil && src.Stats().Connects.Load() == 0 {
		err = fmt.Errorf("never connected to %s", strings.Join(f.src.Brokers, ", "))
	}
	if err != nil {
		code = exitError
	}
	sum.addBolt(emitted, t.Stats("out"))
	return sum.write(report, code), err
}

// pipeline returns the topology of ingest: the MQTT and HTTP sources
// given, into the output and, with --publish and --record, into an MQTT
// sink and a recording at record. giveUp stops the run when the
// publishing sink's connection is refused for good.
func (f *ingestFlags) pipeline(record string, logger *slog.Logger, giveUp func(error)) *pipeline.Pipeline {
	p := &pipeline.Pipeline{}
	if len(f.src.Brokers) > 0 {
		p.Sources = append(p.Sources, pipeline.Source{Name: "mqtt", Type: "mqtt", MQTT: &f.src})
	}
	if f.http.Addr != "" {
		p.Sources = append(p.Sources, pipeline.Source{Name: "http", Type: "http", HTTP: &f.http})
	}
	prec := f.src.Payload.Precision
	addBolt := func(name string, sink *pipeline.Sink) {
		b := pipeline.Bolt{Name: name, Sink: sink, Buffer: syncbuffer.Config{Window: f.window, IdleTimeout: f.idle, Late: f.late}}
		for _, s := range p.Sources {
			b.Inputs = append(b.Inputs, pipeline.Input{From: s.Name, Grouping: "global"})
		}
		p.Bolts = append(p.Bolts, b)
	}
	addBolt("out", f.influx.output(f.out, f.appendOut, prec, logger))
	if f.publish != "" {
		c := &f.src
		addBolt("publish", &pipeline.Sink{Type: "mqtt", Precision: prec, MQTT: &mqtt.SinkConfig{
			ConnConfig: mqtt.ConnConfig{
				Brokers: c.Brokers, ClientID: c.ClientID + "-pub", Username: c.Username, Password: c.Password,
				TLS: c.TLS, KeepAlive: c.KeepAlive, MaxReconnectInterval: c.MaxReconnectInterval,
				MaxTakeovers: c.MaxTakeovers, OnGiveUp: giveUp,
			},
			Topic:     f.publish,
			Precision: prec,
		}})
	}
	if record != "" {
		addBolt("record", &pipeline.Sink{Type: "file", File: record, Precision: particle.Nanosecond})
	}
	return p
}
