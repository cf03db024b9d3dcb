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
	"github.com/sensorstorm/sensorstorm/connectors/influxdb"
	"github.com/sensorstorm/sensorstorm/connectors/mqtt"
	"github.com/sensorstorm/sensorstorm/metrics"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/spool"
	"github.com/sensorstorm/sensorstorm/statuspage"
	"github.com/sensorstorm/sensorstorm/syncbuffer"
	"github.com/sensorstorm/sensorstorm/topology"
)

// ingestMaxPending bounds the trees in flight: with a 1s window, a second
// of messages is pending, and the engine's default would cap the rate at
// 16k messages a second.
const ingestMaxPending = 1 << 18

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
	if code := f.influx.check(c); code != 0 {
		return code
	}
	if f.src.Password == "" {
		f.src.Password = os.Getenv("SENSORSTORM_MQTT_PASSWORD")
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
	var src *mqtt.Source
	if len(f.src.Brokers) > 0 {
		f.src.Logger = logger
		f.src.Spool.Logger = logger
		var err error
		if src, err = mqtt.NewSource(f.src); err != nil {
			return exitUsage, err
		}
	}
	var hsrc *httpwrite.Source
	if f.http.Addr != "" {
		// A spool of its own: a directory belongs to one spool.
		f.http.StateDir = filepath.Join(f.src.StateDir, "http")
		f.http.Spool.Repair = f.src.Spool.Repair
		f.http.Logger = logger
		f.http.Spool.Logger = logger
		var err error
		if hsrc, err = httpwrite.NewSource(f.http); err != nil {
			return exitUsage, err
		}
	}
	out, written, err := f.influx.sink(f.src.Payload.Precision, logger, func() (writtenSink, error) {
		if st, err := os.Stat(f.out); err == nil && st.Mode().IsRegular() && st.Size() > 0 && !f.appendOut {
			// A restart without --append would lose what an earlier run
			// wrote and acknowledged: say so where it shows.
			logger.Warn("replacing the output of an earlier run; --append adds to it instead", "out", f.out, "bytes", st.Size())
		}
		return openSink(f.out, f.appendOut, stdout, f.src.Payload.Precision, logger)
	})
	if errors.Is(err, influxdb.ErrInvalidConfig) {
		return exitUsage, fmt.Errorf("--influx-out: %w", err)
	} else if err != nil {
		return exitError, err
	}
	dead, err := openDeadLetters(f.deadLetter, logger, giveUp)
	if err != nil {
		return exitError, err
	}
	tap := f.status.tap()
	t, err := topology.New(topology.Config{
		Logger:      logger,
		DeadLetters: tap.DeadLetters(dead),
		Acking:      topology.AckingConfig{Enabled: true, MaxPending: ingestMaxPending},
	})
	if err != nil {
		return exitError, err
	}
	var inputs []string
	// instances are those of the components, for the status page.
	instances := map[string][]any{}
	if src != nil {
		t.AddSource("mqtt", tap.Source(topology.Single(src)), topology.SourceConfig{})
		inputs = append(inputs, "mqtt")
		instances["mqtt"] = []any{src}
	}
	if hsrc != nil {
		t.AddSource("http", tap.Source(topology.Single(hsrc)), topology.SourceConfig{})
		inputs = append(inputs, "http")
		instances["http"] = []any{hsrc}
	}
	buf := syncbuffer.Config{Window: f.window, IdleTimeout: f.idle, Late: f.late}
	addBolt := func(name string, op operation.Operation) {
		b := t.AddBolt(name, operation.Stateless(op), topology.BoltConfig{Buffer: buf})
		for _, in := range inputs {
			b.Input(in, topology.Global())
		}
	}
	addBolt("out", out)
	if f.publish != "" {
		sink, err := mqtt.NewSink(mqtt.SinkConfig{
			ConnConfig: mqtt.ConnConfig{
				Brokers: f.src.Brokers, ClientID: f.src.ClientID + "-pub", Username: f.src.Username, Password: f.src.Password,
				TLS: f.src.TLS, KeepAlive: f.src.KeepAlive, MaxReconnectInterval: f.src.MaxReconnectInterval,
				MaxTakeovers: f.src.MaxTakeovers, Logger: logger, OnGiveUp: giveUp,
			},
			Topic:     f.publish,
			Precision: f.src.Payload.Precision,
		})
		if err != nil {
			return exitUsage, err
		}
		addBolt("publish", sink)
		instances["publish"] = []any{sink}
	}
	if f.record != "" {
		if err := os.MkdirAll(f.record, 0o755); err != nil {
			return exitError, err
		}
		path := filepath.Join(f.record, "ingest-"+time.Now().UTC().Format("20060102T150405Z")+".lp")
		rec, err := openSink(path, false, nil, particle.Nanosecond, logger)
		if err != nil {
			return exitError, err
		}
		addBolt("record", rec)
	}

	// The HTTP source is checked at run time: it may or may not report a
	// backlog of its own.
	backlogs := map[string]metrics.Backlogged{}
	if src != nil {
		backlogs["mqtt"] = src
	}
	if b, ok := any(hsrc).(metrics.Backlogged); ok && hsrc != nil {
		backlogs["http"] = b
	}
	page := statuspage.Config{Topology: t, Title: strings.Join(append([]string{"ingest"}, f.src.Topics...), " "), Tap: tap, Logger: logger,
		Metrics: metricsRegistry(t, metrics.NewBacklogs(backlogs, nil)), Instances: staticInstances(instances)}
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
		attrs := []slog.Attr{slog.Uint64("messages", st.Received.Load()), slog.Uint64("written", written()),
			slog.Uint64("recovered", st.Recovered.Load()), slog.Uint64("redelivered", st.Redelivered.Load()), slog.Uint64("copies", st.Copies.Load()),
			slog.Uint64("acked", st.Acked.Load()), slog.Uint64("failed", st.Failed.Load()),
			slog.Int64("reconnects", max(int64(st.Connects.Load())-1, 0))}
		attrs = append(attrs, backlogAttrs(src)...)
		report.line("ingest", append(attrs, slog.Duration("elapsed", elapsed))...)
		writeBacklogKept(report, "ingest: mqtt", src, f.src.StateDir)
	}
	if hsrc != nil {
		st := hsrc.Stats()
		attrs := []slog.Attr{slog.Uint64("requests", st.Requests.Load()), slog.Uint64("accepted", st.Accepted.Load()),
			slog.Uint64("bytes", st.Bytes.Load()), slog.Uint64("points", st.Emitted.Load()), slog.Uint64("invalid", st.Invalid.Load()),
			slog.Uint64("recovered", st.Recovered.Load()),
			slog.Uint64("refused", st.BadRequests.Load()+st.Unauthorized.Load()+st.TooLarge.Load()+st.Unavailable.Load()),
			slog.Uint64("written", written())}
		b, ok := backlogs["http"]
		if ok {
			attrs = append(attrs, backlogAttrs(b)...)
		}
		report.line("ingest: http", append(attrs, slog.Duration("elapsed", elapsed))...)
		if ok {
			writeBacklogKept(report, "ingest: http", b, f.http.StateDir)
		}
	}
	for _, in := range inputs {
		// The engine's count: it rejects particles beyond the future bound
		// that the source counted as emitted.
		emitted += sum.addSource(t.Stats(in))
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
