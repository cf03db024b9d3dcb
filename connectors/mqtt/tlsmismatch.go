package mqtt

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"syscall"
)

// tlsSchemes are the broker URL schemes paho speaks TLS with (wss is TLS
// under WebSocket, left out: its failures come wrapped in HTTP).
var tlsSchemes = map[string]bool{"ssl": true, "tls": true, "mqtts": true, "mqtt+ssl": true, "tcps": true}

// tlsMismatch returns an error wrapping ErrTLSMismatch when err, the
// failure of an attempt to connect to broker, comes from the broker's
// port and its URL disagreeing on TLS, else nil. Both ways the broker
// only resets the connection: a plain MQTT port on reading a
// ClientHello, a TLS port on reading a CONNECT. So a reset or an end of
// the stream before any answer is checked with one TLS handshake, which
// tells which the port speaks; a TLS record header that is not one
// tells it at once.
func tlsMismatch(ctx context.Context, broker string, err error, d *net.Dialer) error {
	u, perr := url.Parse(broker)
	if perr != nil || u.Scheme == "ws" || u.Scheme == "wss" || u.Scheme == "unix" {
		return nil
	}
	secure := tlsSchemes[u.Scheme]
	if _, ok := errors.AsType[tls.RecordHeaderError](err); ok && secure {
		return fmt.Errorf("%w: %s answered the TLS handshake with something else than TLS: it speaks plain MQTT? use tcp://%s", ErrTLSMismatch, broker, u.Host)
	}
	if !closedEarly(err) {
		return nil
	}
	speaks, known := speaksTLS(ctx, u.Host, d)
	switch {
	case !known:
		return nil
	case secure && !speaks:
		return fmt.Errorf("%w: %s closes the connection on a TLS handshake: its port speaks plain MQTT; use tcp://%s or the broker's TLS port", ErrTLSMismatch, broker, u.Host)
	case !secure && speaks:
		return fmt.Errorf("%w: %s speaks TLS: use ssl://%s", ErrTLSMismatch, broker, u.Host)
	}
	return nil
}

// speaksTLS makes a TLS handshake with addr, within d's timeout, to learn
// whether it speaks TLS; known is false when the attempt says nothing
// either way (the address is unreachable, say). Nothing is sent after
// the handshake, so whose certificate it is does not matter.
func speaksTLS(ctx context.Context, addr string, d *net.Dialer) (speaks, known bool) {
	if d.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.Timeout)
		defer cancel()
	}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false, false
	}
	defer c.Close()
	host, _, _ := net.SplitHostPort(addr)
	err = tls.Client(c, &tls.Config{ServerName: host, InsecureSkipVerify: true}).HandshakeContext(ctx) //nolint:gosec // a probe
	_, alert := errors.AsType[tls.AlertError](err)
	_, notTLS := errors.AsType[tls.RecordHeaderError](err)
	switch {
	case err == nil, alert:
		return true, true
	case notTLS, closedEarly(err):
		return false, true
	}
	return false, false
}

// closedEarly reports whether err is the peer resetting or closing the
// connection.
func closedEarly(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
