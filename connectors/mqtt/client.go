package mqtt

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"
	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/eclipse/paho.mqtt.golang/packets"
)

// takeoverWarnAfter is how many connections in a row lost soon after being
// made are logged as a likely session takeover: one or two are what a
// broker restart or a network glitch gives.
const takeoverWarnAfter = 3

// connCounters counts connection events and notes the broker of the
// latest attempt.
type connCounters struct {
	connects, lost *atomic.Uint64
	broker         *atomic.Pointer[string]
}

// conn keeps one paho client connected. Its supervisor makes the first
// connection and every reconnection itself, paho's own retries being off:
// each failed attempt is logged with the broker's reason, waits follow an
// exponential backoff (ReconnectWait doubling up to
// MaxReconnectInterval), and a refusal that retrying cannot fix ends it
// with a *ConnectError. It also tells connections lost soon after being
// made, the sign of two clients sharing a client id.
type conn struct {
	cfg      *ConnConfig
	client   paho.Client
	counters connCounters
	// onConnect runs in the supervisor on every connection, before it
	// counts, told whether the broker kept the session.
	onConnect func(cl paho.Client, sessionPresent bool)

	// lost receives the error of each connection loss; size one: paho
	// reports a loss once, and the supervisor takes it before it connects
	// again.
	lost chan error

	mu sync.Mutex
	up chan struct{} // closed while connected; replaced when the connection is lost

	cancel context.CancelFunc
	done   chan struct{} // closed when the supervisor returned
	err    error         // why the supervisor returned; read after done
	// callbacks are the calls of ConnConfig.OnConnect under way: stop
	// waits for them.
	callbacks sync.WaitGroup
}

// newConn returns a conn for c; opts are completed with the connection
// settings of c. Start runs its supervisor.
func newConn(c *ConnConfig, counters connCounters, opts *paho.ClientOptions, onConnect func(paho.Client, bool)) (*conn, error) {
	tlsCfg, err := c.TLS.tlsConfig()
	if err != nil {
		return nil, err
	}
	cn := &conn{cfg: c, counters: counters, onConnect: onConnect, lost: make(chan error, 1), up: make(chan struct{}), done: make(chan struct{})}
	for _, b := range c.Brokers {
		opts.AddBroker(b)
	}
	c.setOptions(opts, c.ClientID, tlsCfg)
	opts.SetStore(newPacketStore())
	opts.SetConnectionAttemptHandler(func(broker *url.URL, tlsCfg *tls.Config) *tls.Config {
		u := broker.String()
		cn.counters.broker.Store(&u)
		return tlsCfg
	})
	opts.SetConnectionLostHandler(func(_ paho.Client, err error) {
		cn.counters.lost.Add(1)
		select {
		case cn.lost <- err:
		default:
		}
		if c.OnConnectionLost != nil {
			c.OnConnectionLost(err)
		}
	})
	cn.client = paho.NewClient(opts)
	return cn, nil
}

// setOptions sets in opts the settings of c that every connection
// attempt uses, under the client id id: credentials, TLS, protocol and
// timeouts, paho's own retries off.
func (c *ConnConfig) setOptions(opts *paho.ClientOptions, id string, tlsCfg *tls.Config) {
	opts.SetClientID(id)
	opts.SetUsername(c.Username)
	opts.SetPassword(c.Password)
	if tlsCfg != nil {
		opts.SetTLSConfig(tlsCfg)
	}
	// MQTT 3.1.1 only: paho would otherwise retry a refused connection
	// with MQTT 3.1 and report that refusal instead.
	opts.SetProtocolVersion(4)
	opts.SetKeepAlive(c.KeepAlive)
	opts.SetPingTimeout(c.PingTimeout)
	opts.SetConnectTimeout(c.ConnectTimeout)
	opts.SetDialer(&net.Dialer{Timeout: c.ConnectTimeout})
	opts.SetAutoReconnect(false)
	opts.SetConnectRetry(false)
}

// start runs the supervisor until stop.
func (c *conn) start() {
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go func() {
		defer close(c.done)
		c.err = c.supervise(ctx)
		if c.err != nil && c.cfg.OnGiveUp != nil {
			c.cfg.OnGiveUp(c.err)
		}
	}()
}

// stop ends the supervisor, waiting for a connection attempt in progress
// (at most ConnectTimeout) and the OnConnect calls under way, and
// disconnects, giving work in flight DefaultDisconnectQuiesce to finish.
// It returns why the supervisor had ended by itself, if it had.
func (c *conn) stop() error {
	c.cancel()
	<-c.done
	c.callbacks.Wait()
	c.client.Disconnect(uint(DefaultDisconnectQuiesce / time.Millisecond))
	return c.err
}

// failed returns a channel closed when the supervisor gave up, after which
// err says why.
func (c *conn) failed() <-chan struct{} { return c.done }

// ready waits until the client is connected and returns it, or returns
// the supervisor's error or ctx's.
func (c *conn) ready(ctx context.Context) (paho.Client, error) {
	c.mu.Lock()
	up := c.up
	c.mu.Unlock()
	select {
	case <-up:
		return c.client, nil
	case <-c.done:
		if c.err != nil {
			return nil, c.err
		}
		return nil, errClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// errClosed is returned by ready once the client was stopped.
var errClosed = errors.New("mqtt: client closed")

func (c *conn) setUp(up bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if up {
		close(c.up)
	} else {
		c.up = make(chan struct{})
	}
}

// supervise connects, and reconnects whenever the connection is lost,
// until ctx ends (it then returns nil) or a connection attempt is refused
// for good.
func (c *conn) supervise(ctx context.Context) error {
	log := c.cfg.Logger.With("client_id", c.cfg.ClientID)
	if c.cfg.TLS.InsecureSkipVerify {
		log.Warn("mqtt: TLS certificate verification is off (--tls-insecure, insecure_skip_verify): anyone on the path to the broker can read and change the traffic",
			"brokers", c.cfg.Brokers)
	}
	b := &backoff.ExponentialBackOff{InitialInterval: c.cfg.ReconnectWait, Multiplier: 2, MaxInterval: c.cfg.MaxReconnectInterval}
	short := 0 // connections in a row lost soon after being made
	for attempt := 1; ; attempt++ {
		sessionPresent, err := connect(ctx, c.client)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			if broker := c.counters.broker.Load(); broker != nil {
				if mm := tlsMismatch(ctx, *broker, err, &net.Dialer{Timeout: c.cfg.ConnectTimeout}); mm != nil {
					err = mm
				}
			}
			if permanent(err) {
				err = &ConnectError{Brokers: c.cfg.Brokers, ClientID: c.cfg.ClientID, Err: err}
				log.Error("mqtt: connection refused, not retrying", "err", err)
				return err
			}
			wait := b.NextBackOff()
			log.Warn("mqtt: connection attempt failed", "brokers", c.cfg.Brokers, "attempt", attempt, "err", err, "retry_in", wait)
			if !sleep(ctx, wait) {
				return nil
			}
			continue
		}
		attempt = 0
		if c.onConnect != nil {
			c.onConnect(c.client, sessionPresent)
		}
		c.counters.connects.Add(1)
		c.setUp(true)
		log.Info("mqtt: connected", "brokers", c.cfg.Brokers)
		if c.cfg.OnConnect != nil {
			c.callbacks.Go(c.cfg.OnConnect)
		}
		since := time.Now()
		select {
		case err = <-c.lost:
		case <-ctx.Done():
			return nil
		}
		c.setUp(false)
		lived := time.Since(since)
		if lived >= c.cfg.takeoverWindow() {
			// A connection that held says nothing about the next one.
			short = 0
			b.Reset()
			log.Warn("mqtt: connection lost", "err", err, "after", lived.Round(time.Millisecond))
			continue
		}
		short++
		if short < takeoverWarnAfter {
			log.Warn("mqtt: connection lost", "err", err, "after", lived.Round(time.Millisecond))
		} else {
			log.Error("mqtt: connection lost again soon after connecting: another client is probably using the same client id, and the broker hands the session to whichever connected last; give each process its own client id",
				"err", err, "after", lived.Round(time.Millisecond), "times_in_a_row", short)
		}
		if c.cfg.MaxTakeovers > 0 && short >= c.cfg.MaxTakeovers {
			return &ConnectError{Brokers: c.cfg.Brokers, ClientID: c.cfg.ClientID,
				Err: fmt.Errorf("%w: connection lost %d times in a row within %v of connecting", ErrTakeover, short, c.cfg.takeoverWindow())}
		}
		if !sleep(ctx, b.NextBackOff()) {
			return nil
		}
	}
}

// connect makes one connection attempt with cl, trying each of its
// brokers in turn. When ctx ends it still waits for the attempt, which
// ConnectTimeout bounds, so that no paho goroutine outlives the caller.
// It reports whether the broker kept the session (CONNACK's session
// present flag).
func connect(ctx context.Context, cl paho.Client) (bool, error) {
	tok := cl.Connect()
	select {
	case <-tok.Done():
	case <-ctx.Done():
		<-tok.Done()
	}
	ct, ok := tok.(*paho.ConnectToken)
	return ok && ct.SessionPresent(), tok.Error()
}

// sleep waits for d or until ctx ends; it reports false if ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// permanent reports whether a failed connection attempt would fail again
// the same way: the broker refused the client (bad credentials, not
// authorized, client id rejected, protocol version), TLS found the
// broker's certificate untrusted or the broker rejected the client's, or
// the broker URL and the broker's port disagree on TLS.
// An unreachable or unavailable broker is worth retrying.
func permanent(err error) bool {
	for _, refused := range []error{
		ErrTLSMismatch,
		packets.ErrorRefusedBadProtocolVersion, packets.ErrorRefusedIDRejected,
		packets.ErrorRefusedBadUsernameOrPassword, packets.ErrorRefusedNotAuthorised,
	} {
		if errors.Is(err, refused) {
			return true
		}
	}
	var verify *tls.CertificateVerificationError
	if errors.As(err, &verify) {
		return true
	}
	var alert tls.AlertError
	if errors.As(err, &alert) {
		switch alert {
		case 42, 43, 44, 45, 46, 48, 116: // bad, unsupported, revoked, expired, unknown certificate; unknown CA; certificate required
			return true
		}
	}
	return false
}
