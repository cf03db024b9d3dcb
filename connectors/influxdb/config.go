package influxdb

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/streamclock"
)

// Defaults of Config.
const (
	DefaultBatchSize     = 5000
	DefaultFlushInterval = time.Second
	DefaultTimeout       = 30 * time.Second
)

// The write APIs a URL can name.
const (
	pathV1 = "/write"
	pathV2 = "/api/v2/write"
)

// Config configures a Sink.
type Config struct {
	// URL is the write URL as InfluxDB's clients give it: 1.x's
	// http://host:8086/write?db=NAME (optionally &rp=POLICY) or 2.x's
	// http://host:8086/api/v2/write?org=ORG&bucket=BUCKET. A path before
	// /write or /api/v2/write is kept (a proxy's prefix). A precision
	// parameter in it sets Precision; user:password in it is sent as
	// basic authentication, as are 1.x's u and p parameters by the
	// server's reading.
	URL string `yaml:"url"`
	// Token is sent as "Authorization: Token TOKEN" (2.x, and 1.x servers
	// with authentication by token). Defaults to none.
	Token string `yaml:"token"`
	// Username and Password are sent as basic authentication (1.x and
	// servers such as VictoriaMetrics). Default to the URL's user
	// information, else none.
	Username string `yaml:"username"`
	Password string `yaml:"password"`
	// Precision is the unit of the timestamps written; timestamps are
	// truncated to it. Defaults to nanoseconds, or the URL's precision
	// parameter.
	Precision particle.Precision `yaml:"precision"`
	// BatchSize is the most lines in one write. Defaults to
	// DefaultBatchSize.
	BatchSize int `yaml:"batch_size"`
	// FlushInterval is how long a line may wait for its batch to fill: a
	// batch this old is written at the next tick or watermark. Defaults to
	// DefaultFlushInterval.
	FlushInterval time.Duration `yaml:"flush_interval"`
	// Gzip compresses the bodies (Content-Encoding: gzip). Defaults to
	// false.
	Gzip bool `yaml:"gzip"`
	// Timeout bounds one write request; a write that exceeds it is an
	// outage. Defaults to DefaultTimeout.
	Timeout time.Duration `yaml:"timeout"`
	// Client makes the requests. Defaults to a client of its own.
	Client *http.Client `yaml:"-"`
	// Wall is the wall clock, which times batches and Retry-After.
	// Defaults to the system's.
	Wall streamclock.Wall `yaml:"-"`
	// Logger receives the sink's logs. Defaults to discarding them.
	Logger *slog.Logger `yaml:"-"`
}

func (c *Config) setDefaults() {
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.FlushInterval == 0 {
		c.FlushInterval = DefaultFlushInterval
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Client == nil {
		c.Client = &http.Client{}
	}
	if c.Wall == nil {
		c.Wall = streamclock.System{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if u, err := url.Parse(c.URL); err == nil && u.User != nil && c.Username == "" {
		c.Username = u.User.Username()
		c.Password, _ = u.User.Password()
	}
	if _, prec, err := writeURL(c.URL, c.Precision); err == nil {
		c.Precision = prec
	}
}

// Validate reports an error wrapping ErrInvalidConfig for a config that
// cannot work.
func (c *Config) Validate() error {
	switch {
	case c.BatchSize < 0:
		return fmt.Errorf("%w: batch_size %d is negative", ErrInvalidConfig, c.BatchSize)
	case c.FlushInterval < 0:
		return fmt.Errorf("%w: flush_interval %v is negative", ErrInvalidConfig, c.FlushInterval)
	case c.Timeout < 0:
		return fmt.Errorf("%w: timeout %v is negative", ErrInvalidConfig, c.Timeout)
	case c.Token != "" && c.Username != "":
		return fmt.Errorf("%w: set a token or a username, not both", ErrInvalidConfig)
	}
	if _, err := c.Precision.MarshalText(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	_, _, err := writeURL(c.URL, c.Precision)
	return err
}

// writeURL checks a write URL and returns it without user information,
// with the precision parameter of prec in the API's spelling, and the
// precision it writes: the URL's own when it has one and prec is the
// default, nanoseconds.
func writeURL(raw string, prec particle.Precision) (string, particle.Precision, error) {
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		return "", prec, fmt.Errorf("%w: url is empty: give the write URL, such as http://localhost:8086/write?db=NAME or http://localhost:8086/api/v2/write?org=ORG&bucket=BUCKET", ErrInvalidConfig)
	case err != nil:
		return "", prec, fmt.Errorf("%w: url: %w", ErrInvalidConfig, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return "", prec, fmt.Errorf("%w: url %s: the scheme must be http or https", ErrInvalidConfig, raw)
	case u.Host == "":
		return "", prec, fmt.Errorf("%w: url %s has no host", ErrInvalidConfig, raw)
	}
	q := u.Query()
	v2 := strings.HasSuffix(u.Path, pathV2)
	switch {
	case v2 && (q.Get("org") == "" && q.Get("orgID") == "" || q.Get("bucket") == ""):
		return "", prec, fmt.Errorf("%w: url %s: a 2.x write URL needs org and bucket: %s?org=ORG&bucket=BUCKET", ErrInvalidConfig, raw, pathV2)
	case !v2 && !strings.HasSuffix(u.Path, pathV1):
		return "", prec, fmt.Errorf("%w: url %s: the path must end with %s (1.x) or %s (2.x)", ErrInvalidConfig, raw, pathV1, pathV2)
	case !v2 && q.Get("db") == "":
		return "", prec, fmt.Errorf("%w: url %s: a 1.x write URL needs db: %s?db=NAME", ErrInvalidConfig, raw, pathV1)
	}
	if s := q.Get("precision"); s != "" {
		p, err := particle.ParsePrecision(s)
		switch {
		case err != nil:
			return "", prec, fmt.Errorf("%w: url %s: %w", ErrInvalidConfig, raw, err)
		case prec == particle.Nanosecond:
			prec = p
		case p != prec:
			return "", prec, fmt.Errorf("%w: url %s: precision %s, but precision %s is set", ErrInvalidConfig, raw, p, prec)
		}
	}
	name := prec.String()
	if !v2 {
		// 1.x spells nanoseconds and microseconds n and u.
		name = strings.TrimSuffix(name, "s")
		if prec >= particle.Millisecond {
			name = prec.String()
		}
	}
	q.Set("precision", name)
	u.RawQuery = q.Encode()
	u.User = nil
	return u.String(), prec, nil
}
