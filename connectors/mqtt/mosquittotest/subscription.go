package mosquittotest

import (
	"slices"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// Subscription collects what a test's subscriber receives: the payloads
// by topic, in the order they came.
type Subscription struct {
	mu     sync.Mutex
	topics map[string][]string
}

// Payloads returns the payloads received on topic so far, in order.
func (s *Subscription) Payloads(topic string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.topics[topic])
}

// Subscribe connects a client to the broker under client id id and
// subscribes it to filter at QoS 1 until the test ends.
func (b *Broker) Subscribe(t testing.TB, id, filter string) *Subscription {
	t.Helper()
	s := &Subscription{topics: map[string][]string{}}
	cl := paho.NewClient(paho.NewClientOptions().AddBroker(b.URL()).SetClientID(id))
	tok := cl.Connect()
	if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("mosquittotest: subscriber %s: connect: %v", id, tok.Error())
	}
	t.Cleanup(func() { cl.Disconnect(100) })
	tok = cl.Subscribe(filter, 1, func(_ paho.Client, m paho.Message) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.topics[m.Topic()] = append(s.topics[m.Topic()], string(m.Payload()))
	})
	if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("mosquittotest: subscriber %s: subscribe to %s: %v", id, filter, tok.Error())
	}
	return s
}
