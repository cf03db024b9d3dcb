package mqtt

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// connCounters counts connection events.
type connCounters struct {
	connects, lost *atomic.Uint64
}

// clientOptions returns paho options for c: persistent or clean session,
// reconnection with capped backoff (paho starts at 1s and doubles), the
// first connection retried too, and connection events logged, counted and
// passed to c's callbacks. onConnect runs first on every connection, so
// that a connection is counted once the source has subscribed.
func (c *ConnConfig) clientOptions(counters connCounters, onConnect func(paho.Client)) (*paho.ClientOptions, error) {
	tlsCfg, err := c.TLS.tlsConfig()
	if err != nil {
		return nil, err
	}
	o := paho.NewClientOptions()
	for _, b := range c.Brokers {
		o.AddBroker(b)
	}
	o.SetClientID(c.ClientID)
	o.SetUsername(c.Username)
	o.SetPassword(c.Password)
	if tlsCfg != nil {
		o.SetTLSConfig(tlsCfg)
	}
	o.SetKeepAlive(c.KeepAlive)
	o.SetPingTimeout(c.PingTimeout)
	o.SetConnectTimeout(c.ConnectTimeout)
	o.SetAutoReconnect(true)
	o.SetMaxReconnectInterval(c.MaxReconnectInterval)
	o.SetConnectRetry(true)
	o.SetConnectRetryInterval(min(c.MaxReconnectInterval, DefaultMaxReconnectInterval))
	o.SetOnConnectHandler(func(cl paho.Client) {
		if onConnect != nil {
			onConnect(cl)
		}
		counters.connects.Add(1)
		c.Logger.Info("mqtt: connected", "client_id", c.ClientID, "brokers", c.Brokers)
		if c.OnConnect != nil {
			c.OnConnect()
		}
	})
	o.SetConnectionLostHandler(func(_ paho.Client, err error) {
		counters.lost.Add(1)
		c.Logger.Warn("mqtt: connection lost", "client_id", c.ClientID, "err", err)
		if c.OnConnectionLost != nil {
			c.OnConnectionLost(err)
		}
	})
	o.SetReconnectingHandler(func(paho.Client, *paho.ClientOptions) {
		c.Logger.Info("mqtt: reconnecting", "client_id", c.ClientID)
	})
	return o, nil
}

// connect starts connecting and waits until the first connection is up or
// ctx ends; paho keeps retrying meanwhile.
func connect(ctx context.Context, cl paho.Client) error {
	tok := cl.Connect()
	select {
	case <-tok.Done():
		if err := tok.Error(); err != nil {
			return fmt.Errorf("mqtt: connect: %w", err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// disconnect disconnects cl, giving work in flight DefaultDisconnectQuiesce
// to finish.
func disconnect(cl paho.Client) { cl.Disconnect(uint(DefaultDisconnectQuiesce / time.Millisecond)) }
