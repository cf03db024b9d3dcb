package httpguard

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
)

// Defaults for Limits.
const (
	// DefaultReadHeaderTimeout bounds the time to send a request's
	// header.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadTimeout bounds the time to send a whole request, header
	// and body: a 32 MiB body needs about 4.5 Mbit/s.
	DefaultReadTimeout = time.Minute
	// DefaultIdleTimeout bounds how long a kept-alive connection waits
	// for its next request.
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultMaxConns bounds the connections served at a time, well
	// below the descriptors a process has (Go raises the soft limit to
	// the hard one, commonly 524288; some systems keep 4096).
	DefaultMaxConns = 1024
)

// Limits bounds what the clients of one HTTP server may hold. The zero
// Limits is all defaults.
type Limits struct {
	// ReadHeaderTimeout bounds the time to send a request's header.
	// Defaults to DefaultReadHeaderTimeout.
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout"`
	// ReadTimeout bounds the time to send a whole request, header and
	// body; a body not sent in time is cut off. Defaults to
	// DefaultReadTimeout.
	ReadTimeout time.Duration `yaml:"read_timeout"`
	// IdleTimeout bounds how long a kept-alive connection waits for its
	// next request. Defaults to DefaultIdleTimeout.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// MaxConns bounds the connections served at a time; further ones
	// wait in the kernel's accept backlog until one closes. Defaults to
	// DefaultMaxConns.
	MaxConns int `yaml:"max_conns"`
}

func (l *Limits) setDefaults() {
	if l.ReadHeaderTimeout == 0 {
		l.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if l.ReadTimeout == 0 {
		l.ReadTimeout = DefaultReadTimeout
	}
	if l.IdleTimeout == 0 {
		l.IdleTimeout = DefaultIdleTimeout
	}
	if l.MaxConns == 0 {
		l.MaxConns = DefaultMaxConns
	}
}

// Validate reports negative limits.
func (l *Limits) Validate() error {
	if l.ReadHeaderTimeout < 0 || l.ReadTimeout < 0 || l.IdleTimeout < 0 || l.MaxConns < 0 {
		return fmt.Errorf("negative limit: read_header_timeout %v, read_timeout %v, idle_timeout %v, max_conns %d",
			l.ReadHeaderTimeout, l.ReadTimeout, l.IdleTimeout, l.MaxConns)
	}
	return nil
}

// Listen listens on the TCP address addr and accepts at most l.MaxConns
// connections at a time (the default when zero).
func Listen(addr string, l Limits) (net.Listener, error) {
	l.setDefaults()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return netutil.LimitListener(ln, l.MaxConns), nil
}

// NewServer returns a server of h with l's timeouts (defaults for zero
// fields), logging its errors, such as a client's broken handshake, to
// logger at WARN; a nil logger discards them. It sets no write timeout:
// the status page's event streams and a write endpoint answering under
// backpressure write for as long as their client reads.
func NewServer(h http.Handler, l Limits, logger *slog.Logger) *http.Server {
	l.setDefaults()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		IdleTimeout:       l.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}
