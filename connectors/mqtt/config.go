package mqtt

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/spool"
	"github.com/sensorstorm/sensorstorm/streamclock"
)

// Defaults for Config, SinkConfig and their parts.
const (
	DefaultQoS                  = AtLeastOnce
	DefaultMode                 = ModeSpool
	DefaultKeepAlive            = 30 * time.Second
	DefaultPingTimeout          = 10 * time.Second
	DefaultConnectTimeout       = 10 * time.Second
	DefaultReconnectWait        = time.Second
	DefaultMaxReconnectInterval = 30 * time.Second
	DefaultMaxBuffered          = 4096
	DefaultMaxBatch             = 4096
	DefaultMaxPayload           = 1 << 20
	DefaultMaxBufferedBytes     = 64 << 20
	DefaultJSONTimeField        = "time"
	DefaultJSONTimeFormat       = "rfc3339"
	DefaultSinkMaxInflight      = 256
	DefaultPublishTimeout       = 30 * time.Second
	DefaultCommitTopic          = "sensorstorm/commits"
	DefaultDisconnectQuiesce    = 250 * time.Millisecond
)

// QoS is an MQTT quality of service: AtMostOnce, AtLeastOnce or
// ExactlyOnce, or the zero QoS for the default of the config it is in.
// Its values are not the wire's (see Byte): a wire number such as 1 is
// refused, not taken for another QoS.
type QoS uint8

// qosSet marks the values of the constants, apart from the wire's numbers.
const qosSet = 0x80

// The MQTT qualities of service.
const (
	AtMostOnce  QoS = qosSet + iota // QoS 0
	AtLeastOnce                     // QoS 1
	ExactlyOnce                     // QoS 2
)

// Byte returns q as on the wire: 0, 1 or 2.
func (q QoS) Byte() byte { return byte(q &^ qosSet) }

// String returns "0", "1" or "2", or QoS(n) for a value that is none.
func (q QoS) String() string {
	if !q.valid() {
		return fmt.Sprintf("QoS(%d)", uint8(q))
	}
	return fmt.Sprint(q.Byte())
}

// MarshalText implements encoding.TextMarshaler.
func (q QoS) MarshalText() ([]byte, error) { return []byte(q.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler for "0", "1" and "2".
func (q *QoS) UnmarshalText(b []byte) error {
	switch string(b) {
	case "0":
		*q = AtMostOnce
	case "1":
		*q = AtLeastOnce
	case "2":
		*q = ExactlyOnce
	default:
		return fmt.Errorf("mqtt: QoS %q: want 0, 1 or 2", b)
	}
	return nil
}

func (q QoS) valid() bool { return q >= AtMostOnce && q <= ExactlyOnce }

// Mode says when a source acknowledges a message to the broker (PUBACK).
//
// A broker lets a client hold few unacknowledged messages (Mosquitto's
// max_inflight_messages, 20 by default) and queues few more for it
// (max_queued_messages, 1000), dropping the rest silently. A source that
// held the PUBACK of each message until the pipeline had processed it,
// behind a 1s synchronization window, would take about 20 messages a
// second and make the broker drop the rest: the modes trade local state
// against throughput and loss.
//
// Every mode needs a persistent session (Config.CleanSession false, the
// default) and a stable ClientID to survive restarts; with QoS 0 the
// broker sends each message once and nothing protects it.
type Mode uint8

const (
	// ModeSpool acknowledges a message once it is durable in the local
	// write-ahead spool (package spool) in Config.StateDir. A writer
	// makes the messages that arrived meanwhile durable with one fsync
	// (group commit, 0.1 to 0.3 ms on an idle SSD), starting the next as
	// soon as that one ended and anything new arrived, and acknowledges
	// each batch, in arrival order, as soon as its fsync returned; a
	// second goroutine queues it for the pipeline. So a broker holding 20
	// messages unacknowledged waits for one fsync at a time, not for the
	// pipeline nor a goroutine hand-off: it works with a stock broker at
	// close to a bare subscriber's rate. A message is marked complete in
	// the spool when all its particles were processed, and complete
	// segments are deleted; at start, the messages a previous run did not
	// complete are emitted again before any new one. A crash, even
	// SIGKILL, loses nothing: what was not acknowledged the broker sends
	// again, what was acknowledged the spool replays. Duplicates are
	// possible (Stats.Recovered, Stats.Redelivered), loss is not. It
	// costs local disk (what waits for the pipeline, plus up to 1 MiB
	// preallocated; see spool.Config) and one fsync per batch.
	ModeSpool Mode = iota
	// ModeTree acknowledges a message once every particle decoded from
	// it was processed (their trees completed), as an in-order prefix,
	// since MQTT 3.1.1 requires acknowledgements in arrival order. No
	// local state, no loss, but throughput is bounded by the broker's
	// max_inflight_messages divided by the processing latency (window
	// included): raise max_inflight_messages (to 10000, say, or 0 for no
	// limit) and max_queued_messages on the broker, or it takes about 20
	// messages a second with a 1s window and the broker drops beyond its
	// queue. The engine reports completions without waiting: the
	// source's own goroutine sends the acknowledgements.
	ModeTree
	// ModeReceipt acknowledges a message as soon as the pipeline takes
	// it. Fast with a stock broker and no local state, but a crash loses
	// the messages taken and not yet processed: at most once for those.
	ModeReceipt
)

var modeNames = [...]string{ModeSpool: "spool", ModeTree: "tree", ModeReceipt: "receipt"}

// String returns "spool", "tree" or "receipt".
func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", m)
}

// MarshalText implements encoding.TextMarshaler.
func (m Mode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (m *Mode) UnmarshalText(b []byte) error {
	for i, n := range modeNames {
		if n == string(b) {
			*m = Mode(i)
			return nil
		}
	}
	return fmt.Errorf("mqtt: mode %q: want spool, tree or receipt", b)
}

// Format is a payload format.
type Format uint8

const (
	// FormatLineProtocol is InfluxDB line protocol, one or more lines
	// per payload.
	FormatLineProtocol Format = iota
	// FormatJSON is a JSON object, or an array of objects.
	FormatJSON
)

// String returns "lp" or "json".
func (f Format) String() string {
	if f == FormatJSON {
		return "json"
	}
	return "lp"
}

// MarshalText implements encoding.TextMarshaler.
func (f Format) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler for "lp" (or
// "line-protocol") and "json".
func (f *Format) UnmarshalText(b []byte) error {
	switch string(b) {
	case "lp", "line-protocol", "influx":
		*f = FormatLineProtocol
	case "json":
		*f = FormatJSON
	default:
		return fmt.Errorf("mqtt: format %q: want lp or json", b)
	}
	return nil
}

// ConnConfig configures the connection to the broker, for a Source and a
// Sink alike. Sources and sinks make every connection themselves, paho's
// own retries being off, so that each failed attempt is logged with the
// broker's reason and a refusal that retrying cannot fix stops the client
// (see ReconnectWait).
type ConnConfig struct {
	// Brokers are the broker URLs, tried in order: tcp://host:1883,
	// ssl://host:8883, ws://host/mqtt or wss://. A URL with a scheme paho
	// does not connect with (tcp, ssl, tls, mqtts, ws, wss, unix...)
	// fails validation with ErrBrokerURL. Required.
	Brokers []string `yaml:"brokers"`
	// ClientID identifies the client to the broker. A persistent session
	// belongs to a client id: it must stay the same across restarts, and
	// differ between processes connected at the same time. Defaults to
	// DefaultClientID("sensorstorm").
	ClientID string `yaml:"client_id"`
	// Username and Password authenticate the client. Default to none.
	Username string `yaml:"username"`
	Password string `yaml:"password"`
	// TLS configures TLS for ssl:// and wss:// brokers.
	TLS TLSConfig `yaml:"tls"`
	// KeepAlive is the interval of keepalive pings. Defaults to
	// DefaultKeepAlive.
	KeepAlive time.Duration `yaml:"keep_alive"`
	// PingTimeout is how long a ping may go unanswered before the
	// connection is considered lost. Defaults to DefaultPingTimeout.
	PingTimeout time.Duration `yaml:"ping_timeout"`
	// ConnectTimeout bounds one connection attempt. Defaults to
	// DefaultConnectTimeout.
	ConnectTimeout time.Duration `yaml:"connect_timeout"`
	// ReconnectWait is the wait after a failed connection attempt; it
	// doubles after each further failure, up to MaxReconnectInterval. The
	// first connection is retried the same way, and a lost connection is
	// retried at once. Every failed attempt is logged with the broker's
	// reason. A refusal that retrying cannot fix (bad credentials, not
	// authorized, client id rejected, an untrusted broker certificate)
	// is not retried: the Source's Run returns a *ConnectError. Defaults
	// to DefaultReconnectWait.
	ReconnectWait time.Duration `yaml:"reconnect_wait"`
	// MaxReconnectInterval caps the wait between connection attempts.
	// Defaults to DefaultMaxReconnectInterval.
	MaxReconnectInterval time.Duration `yaml:"max_reconnect_interval"`
	// MaxTakeovers stops the client with a *ConnectError wrapping
	// ErrTakeover once this many connections in a row were lost less
	// than twice MaxReconnectInterval after being made: what a broker
	// does to two clients with the same client id, handing the session
	// to whichever connected last. From the third such loss on, each is
	// logged as an error naming the client id. Defaults to 0: never stop.
	MaxTakeovers int `yaml:"max_takeovers"`

	// Logger receives connection events. Defaults to discarding them.
	Logger *slog.Logger `yaml:"-"`
	// Wall is the wall clock: the live stream clock, which stamps
	// readings that carry no time of their own, and the clock of
	// publication deadlines. Defaults to streamclock.System.
	Wall streamclock.Wall `yaml:"-"`
	// OnConnect is called, in its own goroutine, after every connection
	// and reconnection; closing the client waits for the calls under way,
	// so it must not close the client. Defaults to nil.
	OnConnect func() `yaml:"-"`
	// OnConnectionLost is called, in its own goroutine, when an
	// established connection is lost. Defaults to nil.
	OnConnectionLost func(err error) `yaml:"-"`
	// OnGiveUp is called with the *ConnectError when the client stops
	// connecting for good (see ReconnectWait and MaxTakeovers): a Sink
	// fails every particle from then on. It must not block nor close the
	// client. Defaults to nil.
	OnGiveUp func(err error) `yaml:"-"`
}

// TLSConfig configures TLS. Files are PEM.
type TLSConfig struct {
	// CAFile holds the certificate authorities to trust. Defaults to the
	// system's.
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile hold the client certificate and its key, for
	// brokers that require one. Default to none.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ServerName overrides the name checked in the broker's certificate.
	// Defaults to the broker URL's host.
	ServerName string `yaml:"server_name"`
	// InsecureSkipVerify accepts any broker certificate: for tests only.
	// Defaults to false.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
}

// Config configures a Source.
type Config struct {
	ConnConfig `yaml:",inline"`
	// Topics are the topic filters to subscribe to, with + and #
	// wildcards; $share/GROUP/FILTER makes instances with different
	// client ids split a feed. Required.
	Topics []string `yaml:"topics"`
	// QoS of the subscriptions. Defaults to DefaultQoS (1).
	QoS QoS `yaml:"qos"`
	// CleanSession asks the broker to forget the session when the client
	// disconnects; messages published meanwhile are then lost. Defaults
	// to false: a persistent session.
	CleanSession bool `yaml:"clean_session"`
	// Mode says when a message is acknowledged to the broker. Defaults to
	// DefaultMode (spool).
	Mode Mode `yaml:"mode"`
	// StateDir holds the spool, and records the topic filters the
	// persistent session is subscribed to: a run whose Topics no longer
	// has a filter unsubscribes from it. Required in ModeSpool; optional
	// otherwise, when messages of filters no longer configured are still
	// acknowledged and dropped (Stats.Unwanted) but the broker keeps
	// sending them.
	StateDir string `yaml:"state_dir"`
	// Spool configures the spool.
	Spool spool.Config `yaml:"spool"`
	// MaxBatch bounds the messages made durable by one fsync. Defaults
	// to DefaultMaxBatch.
	MaxBatch int `yaml:"max_batch"`
	// MaxBuffered bounds the messages held in memory between the broker
	// and the pipeline. In ModeSpool, messages beyond it wait in the
	// spool on disk (see Backlog) and are read back when the pipeline
	// gets to them. In the other modes the source then stops
	// acknowledging, so the broker stops sending (QoS 1 and 2) or drops
	// (QoS 0, counted). Defaults to DefaultMaxBuffered.
	MaxBuffered int `yaml:"max_buffered"`
	// MaxBufferedBytes bounds the same messages by their payload bytes.
	// Add what the broker sends unacknowledged, up to its in-flight
	// window times its largest message. Defaults to
	// DefaultMaxBufferedBytes.
	MaxBufferedBytes int `yaml:"max_buffered_bytes"`
	// Backlog bounds, in ModeSpool, the messages waiting in the spool
	// for the pipeline: its disk quota (max_backlog_bytes) and the free
	// space kept for the system (min_free_bytes). At the quota the
	// source stops acknowledging, and says so at error level. Its
	// memory bounds are MaxBuffered and MaxBufferedBytes.
	Backlog spool.BacklogConfig `yaml:"backlog"`
	// MaxPayload is the largest payload decoded, in bytes. A larger
	// message is bad input: acknowledged, counted as invalid, and
	// rejected to the dead-letter sink with an error wrapping
	// ErrPayloadTooLarge and its first 256 bytes. Set the broker's
	// message_size_limit too, so that it does not send such messages at
	// all. Defaults to DefaultMaxPayload (1 MiB).
	MaxPayload int `yaml:"max_payload"`
	// Payload says how payloads are decoded.
	Payload PayloadConfig `yaml:"payload"`
	// Checkpoints says that the run takes checkpoints (ModeSpool only):
	// a record leaves the spool once a checkpoint holding it completes,
	// not when its particles are acknowledged, and a restored run resumes
	// from the checkpoint's position (see Source.Position). Set by the
	// pipeline that takes them.
	Checkpoints bool `yaml:"-"`
}

// PayloadConfig says how payloads become particles.
type PayloadConfig struct {
	// Format of the payloads. Defaults to FormatLineProtocol.
	Format Format `yaml:"format"`
	// Precision of line-protocol timestamps. Defaults to nanoseconds.
	Precision particle.Precision `yaml:"precision"`
	// TopicTags is a template such as "sensors/{room}/{sensor}": a topic
	// segment in the place of {name} becomes the tag name (unless the
	// payload has it or the segment is empty). A topic must match the
	// template: {name} and + stand for any one segment, a trailing # for
	// any number, other segments for themselves. A message on a topic
	// that does not match is bad input: acknowledged, counted as
	// invalid, and rejected to the dead-letter sink with an error
	// wrapping ErrTopicMismatch. Defaults to none.
	TopicTags string `yaml:"topic_tags"`
	// RequireTime makes a reading without a timestamp bad input.
	// Defaults to false: it gets the time the message was received.
	RequireTime bool `yaml:"require_time"`
	// JSON configures FormatJSON.
	JSON JSONConfig `yaml:"json"`
}

// JSONConfig configures JSON payloads: an object, or an array of objects,
// each one reading. Numbers become float fields, booleans bool fields,
// nested objects are flattened with "_" (a_b), nulls are skipped. As in
// line protocol, a key given twice in an object is an error
// (ErrDuplicateKey), and so is an integer beyond int64
// (particle.ErrValueOutOfRange) rather than a float that is not it.
type JSONConfig struct {
	// TimeField is the member holding the timestamp. Defaults to
	// DefaultJSONTimeField.
	TimeField string `yaml:"time_field"`
	// TimeFormat is "rfc3339" (a string), or "unix", "unix_ms", "unix_us"
	// or "unix_ns" (a number of seconds, which may have a fraction, or
	// of milli-, micro- or nanoseconds), or a Go time layout. Defaults
	// to DefaultJSONTimeFormat.
	TimeFormat string `yaml:"time_format"`
	// MeasurementField is the member naming the measurement. Defaults to
	// none.
	MeasurementField string `yaml:"measurement_field"`
	// Measurement is the measurement of objects without
	// MeasurementField. Defaults to the topic's last segment.
	Measurement string `yaml:"measurement"`
	// TagFields are the members that become tags. Defaults to none.
	TagFields []string `yaml:"tag_fields"`
	// StringsAsTags makes every other string member a tag too. Defaults
	// to false: they are string fields.
	StringsAsTags bool `yaml:"strings_as_tags"`
}

// SinkConfig configures a Sink.
type SinkConfig struct {
	ConnConfig `yaml:",inline"`
	// Topic is the template of the topic a particle is published to:
	// {name} stands for the value of tag name, {measurement} for the
	// measurement unless a tag has that name. A value fills one topic
	// level: its "/", "+", "#", NUL and "%" are percent-encoded, so that
	// tag value "in/x" gives "results/in%2Fx", never "results/in/x".
	// Required.
	Topic string `yaml:"topic"`
	// QoS of the publications. Defaults to DefaultQoS (1).
	QoS QoS `yaml:"qos"`
	// Retain asks the broker to keep the last message of each topic.
	// Defaults to false.
	Retain bool `yaml:"retain"`
	// Format of the payloads. Defaults to FormatLineProtocol.
	Format Format `yaml:"format"`
	// Precision of line-protocol timestamps. Defaults to nanoseconds.
	Precision particle.Precision `yaml:"precision"`
	// MaxInflight bounds the publications awaiting the broker's
	// confirmation; Process blocks beyond it. Defaults to
	// DefaultSinkMaxInflight.
	MaxInflight int `yaml:"max_inflight"`
	// PublishTimeout is how long the broker may take to confirm a
	// publication before the sink publishes it again and reports the
	// broker failing (operation.ErrDestination): the input stays held,
	// never failed. Defaults to DefaultPublishTimeout.
	PublishTimeout time.Duration `yaml:"publish_timeout"`
	// AtLeastOnce publishes at once even when the run takes checkpoints,
	// rather than once the checkpoint holding a publication completes:
	// output comes without the checkpoints' delay, and what was
	// published after the checkpoint a run is restored from is
	// published again. Defaults to false.
	AtLeastOnce bool `yaml:"at_least_once"`
	// CommitTopic is the topic under which a sink that publishes at
	// checkpoints keeps, retained, the mark of what it published: one
	// message per run, on CommitTopic/RUN. Defaults to
	// DefaultCommitTopic.
	CommitTopic string `yaml:"commit_topic"`
}

// DefaultClientID returns prefix-hostname: stable across restarts, so that
// a persistent session survives them.
func DefaultClientID(prefix string) string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return prefix
	}
	return prefix + "-" + h
}

func (c *ConnConfig) setDefaults(prefix string) {
	if c.ClientID == "" {
		c.ClientID = DefaultClientID(prefix)
	}
	if c.KeepAlive == 0 {
		c.KeepAlive = DefaultKeepAlive
	}
	if c.PingTimeout == 0 {
		c.PingTimeout = DefaultPingTimeout
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.ReconnectWait == 0 {
		c.ReconnectWait = DefaultReconnectWait
		if c.MaxReconnectInterval > 0 {
			c.ReconnectWait = min(c.ReconnectWait, c.MaxReconnectInterval)
		}
	}
	if c.MaxReconnectInterval == 0 {
		c.MaxReconnectInterval = max(DefaultMaxReconnectInterval, c.ReconnectWait)
	}
	if c.Wall == nil {
		c.Wall = streamclock.System{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

func (c *ConnConfig) validate() []error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, ErrNoBroker)
	}
	for _, b := range c.Brokers {
		if err := checkBrokerURL(b); err != nil {
			errs = append(errs, err)
		}
	}
	if c.KeepAlive < time.Second || c.PingTimeout < 0 || c.ConnectTimeout < 0 {
		errs = append(errs, errors.New("keepalive below 1s or negative timeout"))
	}
	if c.ReconnectWait <= 0 || c.MaxReconnectInterval < c.ReconnectWait {
		errs = append(errs, errors.New("reconnect wait must be positive and at most the max reconnect interval"))
	}
	if c.MaxTakeovers < 0 {
		errs = append(errs, errors.New("negative max takeovers"))
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		errs = append(errs, errors.New("tls: cert file and key file go together"))
	}
	return errs
}

func (c *Config) setDefaults() {
	c.ConnConfig.setDefaults("sensorstorm")
	if c.QoS == 0 {
		c.QoS = DefaultQoS
	}
	if c.MaxBatch == 0 {
		c.MaxBatch = DefaultMaxBatch
	}
	if c.MaxBuffered == 0 {
		c.MaxBuffered = DefaultMaxBuffered
	}
	if c.MaxPayload == 0 {
		c.MaxPayload = DefaultMaxPayload
	}
	if c.MaxBufferedBytes == 0 {
		c.MaxBufferedBytes = max(DefaultMaxBufferedBytes, c.MaxPayload)
	}
	c.Payload.setDefaults()
}

// Validate reports every invalid field.
func (c *Config) Validate() error {
	errs := c.ConnConfig.validate()
	if len(c.Topics) == 0 {
		errs = append(errs, ErrNoTopic)
	}
	if c.Checkpoints && c.Mode != ModeSpool {
		errs = append(errs, fmt.Errorf("checkpoints need mode spool, whose spool keeps what a checkpoint has not covered; mode is %s", c.Mode))
	}
	for _, t := range c.Topics {
		if !validFilter(t) {
			errs = append(errs, fmt.Errorf("topic filter %q", t))
		}
	}
	if !c.QoS.valid() {
		errs = append(errs, fmt.Errorf("%v: want AtMostOnce, AtLeastOnce or ExactlyOnce", c.QoS))
	}
	if int(c.Mode) >= len(modeNames) {
		errs = append(errs, fmt.Errorf("mode %d", c.Mode))
	}
	if c.Mode == ModeSpool && c.StateDir == "" {
		errs = append(errs, ErrNoStateDir)
	}
	if c.MaxBatch < 1 || c.MaxBuffered < 1 {
		errs = append(errs, errors.New("max batch and max buffered must be positive"))
	}
	if c.MaxPayload < 1 || c.MaxBufferedBytes < c.MaxPayload {
		errs = append(errs, errors.New("max payload must be positive and at most max buffered bytes"))
	}
	if c.Backlog.MaxBytes < 0 || c.Backlog.MinFree < 0 {
		errs = append(errs, errors.New("negative max backlog bytes or min free bytes"))
	}
	if err := c.Spool.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Payload.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("mqtt: invalid config: %w", err)
	}
	return nil
}

func (c *PayloadConfig) setDefaults() {
	if c.JSON.TimeField == "" {
		c.JSON.TimeField = DefaultJSONTimeField
	}
	if c.JSON.TimeFormat == "" {
		c.JSON.TimeFormat = DefaultJSONTimeFormat
	}
}

func (c *PayloadConfig) validate() error {
	if c.Format > FormatJSON {
		return fmt.Errorf("format %d", c.Format)
	}
	if _, err := particle.ParsePrecision(c.Precision.String()); err != nil {
		return err
	}
	return nil
}

func (c *SinkConfig) setDefaults() {
	c.ConnConfig.setDefaults("sensorstorm-sink")
	if c.QoS == 0 {
		c.QoS = DefaultQoS
	}
	if c.MaxInflight == 0 {
		c.MaxInflight = DefaultSinkMaxInflight
	}
	if c.PublishTimeout == 0 {
		c.PublishTimeout = DefaultPublishTimeout
	}
	if c.CommitTopic == "" {
		c.CommitTopic = DefaultCommitTopic
	}
}

// Validate reports every invalid field.
func (c *SinkConfig) Validate() error {
	errs := c.ConnConfig.validate()
	if c.Topic == "" || strings.ContainsAny(c.Topic, "+#") {
		errs = append(errs, fmt.Errorf("sink topic template %q: empty or with wildcards", c.Topic))
	}
	if !c.QoS.valid() {
		errs = append(errs, fmt.Errorf("%v: want AtMostOnce, AtLeastOnce or ExactlyOnce", c.QoS))
	}
	if c.Format > FormatJSON {
		errs = append(errs, fmt.Errorf("format %d", c.Format))
	}
	if c.MaxInflight < 1 || c.PublishTimeout < 0 {
		errs = append(errs, errors.New("max inflight must be positive, publish timeout not negative"))
	}
	if strings.ContainsAny(c.CommitTopic, "+#\x00") || strings.HasPrefix(c.CommitTopic, "$") {
		errs = append(errs, fmt.Errorf("commit topic %q: with wildcards, NUL or a leading $", c.CommitTopic))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("mqtt: invalid sink config: %w", err)
	}
	return nil
}

// brokerSchemes are the URL schemes paho connects with.
var brokerSchemes = map[string]bool{
	"tcp": true, "mqtt": true, "ssl": true, "tls": true, "mqtts": true, "mqtt+ssl": true, "tcps": true,
	"ws": true, "wss": true, "unix": true,
}

// checkBrokerURL reports a broker URL paho could never connect with: an
// unknown scheme (http://, say) or no host. Like paho, it reads a URL
// without a scheme as tcp://.
func checkBrokerURL(s string) error {
	if !strings.Contains(s, "://") {
		s = "tcp://" + s
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %w", ErrBrokerURL, err)
	case !brokerSchemes[u.Scheme]:
		return fmt.Errorf("%w %q: scheme %q, want tcp, ssl, ws, wss or unix", ErrBrokerURL, s, u.Scheme)
	case u.Scheme != "unix" && u.Host == "":
		return fmt.Errorf("%w %q: no host", ErrBrokerURL, s)
	}
	return nil
}

// takeoverWindow is how soon after being made a lost connection counts
// towards MaxTakeovers: two clients with the same id, each waiting at
// most MaxReconnectInterval, take the session from each other within it.
func (c *ConnConfig) takeoverWindow() time.Duration { return 2 * c.MaxReconnectInterval }

// tlsConfig builds the TLS configuration, or returns nil when none is
// asked for.
func (t *TLSConfig) tlsConfig() (*tls.Config, error) {
	if *t == (TLSConfig{}) {
		return nil, nil
	}
	cfg := &tls.Config{ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify, MinVersion: tls.VersionTLS12}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("mqtt: tls: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("mqtt: tls: no certificate in %s", t.CAFile)
		}
		cfg.RootCAs = pool
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("mqtt: tls: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
