package mqtt

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// Probe checks that a broker of c accepts a connection as a Source or a
// Sink with c would make it (the same URLs, credentials, TLS and
// timeouts), without subscribing or publishing anything. It tries the
// brokers in turn until one answers the CONNECT with a CONNACK accepting
// it, disconnects at once and returns that broker. Otherwise the error
// joins each broker's: paho's (a refusal wraps packets.ErrorRefused...),
// a network error, or one wrapping ErrTLSMismatch.
//
// The probe connects under a client id of its own, c.ClientID followed by
// "-probe-" and random letters, with a clean session. It must never use
// c.ClientID itself: the broker would hand that id's persistent session
// to the probe, disconnecting a pipeline running with it, and a clean
// connection would discard the messages the broker queued for it.
func Probe(ctx context.Context, c ConnConfig) (string, error) {
	c.setDefaults("sensorstorm")
	if err := errors.Join(c.validate()...); err != nil {
		return "", fmt.Errorf("mqtt: invalid config: %w", err)
	}
	tlsCfg, err := c.TLS.tlsConfig()
	if err != nil {
		return "", err
	}
	id := c.ClientID + "-probe-" + rand.Text()[:8]
	var errs []error
	for _, broker := range c.Brokers {
		opts := paho.NewClientOptions().AddBroker(broker).SetCleanSession(true)
		c.setOptions(opts, id, tlsCfg)
		cl := paho.NewClient(opts)
		_, err := connect(ctx, cl)
		if err == nil {
			cl.Disconnect(uint(DefaultDisconnectQuiesce / time.Millisecond))
			return broker, nil
		}
		if mm := tlsMismatch(ctx, broker, err, &net.Dialer{Timeout: c.ConnectTimeout}); mm != nil {
			err = mm
		}
		errs = append(errs, fmt.Errorf("mqtt: connecting to %s as %q: %w", broker, id, err))
		if ctx.Err() != nil {
			break
		}
	}
	return "", errors.Join(errs...)
}
