package mqtt_test

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/sensorstorm/sensorstorm/connectors/mqtt"
	"github.com/sensorstorm/sensorstorm/connectors/mqtt/mosquittotest"
	"github.com/sensorstorm/sensorstorm/connectortest"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/particle"
	"github.com/sensorstorm/sensorstorm/topology"
)

// conformanceBroker is the broker of the conformance scenarios: it keeps
// sessions across a restart and holds enough messages in flight and
// queued for the tree mode (see docs/ingest.md's table of modes).
var conformanceBroker = mosquittotest.Config{Persistence: true, MaxInflight: 1000, MaxQueued: 100_000}

func TestSourceConformance(t *testing.T) {
	for _, tc := range []struct {
		mode    mqtt.Mode
		restart bool
	}{
		{mqtt.ModeSpool, true},
		{mqtt.ModeTree, true},
		{mqtt.ModeReceipt, false}, // at most once: a kill loses what is in flight
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			connectortest.TestSource(t, connectortest.Features{Restart: tc.restart}, func(t *testing.T, env *connectortest.Env) connectortest.SourceHarness {
				return newSourceHarness(t, env, tc.mode)
			})
		})
	}
}

// sourceHarness runs the Source through a tap on its connection.
type sourceHarness struct {
	mode   mqtt.Mode
	broker *mosquittotest.Broker // nil in the child process
	url    string                // where the source connects
	state  string
	tap    *tap
	pub    paho.Client
}

func newSourceHarness(t *testing.T, env *connectortest.Env, mode mqtt.Mode) *sourceHarness {
	h := &sourceHarness{mode: mode}
	if env.Child() {
		h.url, h.state = env.Get("broker"), env.Get("state")
		return h
	}
	h.broker = mosquittotest.Start(t, conformanceBroker)
	h.state = filepath.Join(t.TempDir(), "state")
	env.Set("broker", h.broker.URL())
	env.Set("state", h.state)
	h.tap = newTap(t, h.broker.Addr())
	h.url = "tcp://" + h.tap.addr()
	h.pub = paho.NewClient(paho.NewClientOptions().AddBroker(h.broker.URL()).SetClientID("conformance-pub").
		SetCleanSession(false).SetStore(paho.NewOrderedMemoryStore()).
		SetConnectRetry(true).SetMaxReconnectInterval(100 * time.Millisecond))
	tok := h.pub.Connect()
	if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("publisher: connect: %v", tok.Error())
	}
	t.Cleanup(func() { h.pub.Disconnect(100) })
	return h
}

func (h *sourceHarness) NewSource(t testing.TB) topology.Source {
	src, err := mqtt.NewSource(mqtt.Config{
		ConnConfig: mqtt.ConnConfig{Brokers: []string{h.url}, ClientID: "conformance", MaxReconnectInterval: 100 * time.Millisecond},
		Topics:     []string{"sensors/#"},
		Mode:       h.mode,
		StateDir:   h.state,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

func (h *sourceHarness) Publish(t testing.TB, readings []particle.Particle) {
	var last paho.Token
	for i := range readings {
		line, err := particle.AppendLineProtocol(nil, &readings[i], particle.Nanosecond)
		if err != nil {
			t.Fatal(err)
		}
		last = h.pub.Publish("sensors/"+readings[i].Tags[0].Value, 1, false, line)
	}
	if last != nil && (!last.WaitTimeout(30*time.Second) || last.Error() != nil) {
		t.Fatalf("publish: %v", last.Error())
	}
}

func (h *sourceHarness) StopBroker(testing.TB) { h.broker.Stop() }

// StartBroker starts the broker and waits for the publisher to be back:
// what it stored meanwhile it would resend in any order.
func (h *sourceHarness) StartBroker(t testing.TB) {
	h.broker.Start()
	deadline := time.Now().Add(10 * time.Second)
	for !h.pub.IsConnectionOpen() {
		if time.Now().After(deadline) {
			t.Fatal("publisher not reconnected")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (h *sourceHarness) Acks() (delivered, acked []uint64) { return h.tap.ids() }

func TestSinkConformance(t *testing.T) {
	connectortest.TestSink(t, connectortest.Features{DeliveryDelay: 10 * time.Second}, newSinkHarness)
}

// sinkHarness reads what the Sink published with a subscriber of its own.
// The sink reaches the broker through a tap, which Break cuts: the
// destination fails for the sink alone, while the subscriber that reads
// it stays connected.
type sinkHarness struct {
	broker *mosquittotest.Broker
	tap    *tap
	mu     sync.Mutex
	got    []int
}

func newSinkHarness(t *testing.T) connectortest.SinkHarness {
	h := &sinkHarness{broker: mosquittotest.Start(t, conformanceBroker)}
	h.tap = newTap(t, h.broker.Addr())
	record := func(_ paho.Client, m paho.Message) {
		h.mu.Lock()
		h.got = append(h.got, connectortest.NumbersIn(m.Payload())...)
		h.mu.Unlock()
	}
	// The handler is in place before any connection: messages queued for
	// the persistent session arrive at once on a reconnection, before
	// the subscription is made again, and paho acknowledges and drops
	// what no handler takes.
	sub := paho.NewClient(paho.NewClientOptions().AddBroker(h.broker.URL()).SetClientID("conformance-sub").
		SetCleanSession(false).SetConnectRetry(true).SetMaxReconnectInterval(100 * time.Millisecond).
		SetDefaultPublishHandler(record).
		SetOnConnectHandler(func(c paho.Client) { c.Subscribe("results/#", 1, nil) }))
	tok := sub.Connect()
	if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("subscriber: connect: %v", tok.Error())
	}
	t.Cleanup(func() { sub.Disconnect(100) })
	return h
}

func (h *sinkHarness) NewSink(t testing.TB) operation.Operation {
	s, err := mqtt.NewSink(mqtt.SinkConfig{
		ConnConfig: mqtt.ConnConfig{Brokers: []string{"tcp://" + h.tap.addr()}, ClientID: "conformance-sink", MaxReconnectInterval: 100 * time.Millisecond},
		Topic:      "results/{sensor}",
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (h *sinkHarness) Read(testing.TB) []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.got)
}

func (h *sinkHarness) Break(testing.TB) { h.tap.cut(true) }
func (h *sinkHarness) Mend(testing.TB)  { h.tap.cut(false) }

// tap is a TCP proxy between MQTT clients and a broker that notes, in
// order, the packet ids of the QoS 1 PUBLISH packets the broker sends and
// of the PUBACK packets the clients return.
type tap struct {
	ln       net.Listener
	upstream string
	wg       sync.WaitGroup

	mu               sync.Mutex
	conns            []net.Conn
	down             bool // cut: connections are refused
	delivered, acked []uint64
}

func newTap(t testing.TB, upstream string) *tap {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tap{ln: ln, upstream: upstream}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *tap) addr() string { return p.ln.Addr().String() }

// cut refuses connections and closes those open, or lets them through
// again.
func (p *tap) cut(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if down {
		for _, c := range p.conns {
			c.Close()
		}
		p.conns = nil
	}
}

func (p *tap) ids() (delivered, acked []uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.delivered), slices.Clone(p.acked)
}

func (p *tap) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			c.Close()
			continue
		}
		u, err := net.Dial("tcp", p.upstream)
		if err != nil {
			c.Close() // the broker is down: the client reconnects
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(u, c, &p.acked, 4)     // client to broker: PUBACK
		go p.pipe(c, u, &p.delivered, 3) // broker to client: PUBLISH
	}
}

// pipe copies MQTT packets from src to dst, noting in ids the packet id of
// those of type typ (3, PUBLISH, at QoS 1 or 2; 4, PUBACK).
func (p *tap) pipe(dst, src net.Conn, ids *[]uint64, typ byte) {
	defer p.wg.Done()
	defer dst.Close()
	defer src.Close()
	r := bufio.NewReader(src)
	for {
		head, body, err := readPacket(r)
		if err != nil {
			return
		}
		if id, ok := packetID(head[0], body, typ); ok {
			p.mu.Lock()
			*ids = append(*ids, id)
			p.mu.Unlock()
		}
		if _, err := dst.Write(append(head, body...)); err != nil {
			return
		}
	}
}

// readPacket reads one MQTT control packet: its fixed header and its body.
func readPacket(r *bufio.Reader) (head, body []byte, err error) {
	b, err := r.ReadByte()
	if err != nil {
		return nil, nil, err
	}
	head = []byte{b}
	var n, shift int
	for {
		c, err := r.ReadByte()
		if err != nil {
			return nil, nil, err
		}
		head = append(head, c)
		n |= int(c&0x7f) << shift
		if c&0x80 == 0 {
			break
		}
		if shift += 7; shift > 21 {
			return nil, nil, errors.New("tap: malformed remaining length")
		}
	}
	body = make([]byte, n)
	_, err = io.ReadFull(r, body)
	return head, body, err
}

func packetID(first byte, body []byte, typ byte) (uint64, bool) {
	if first>>4 != typ {
		return 0, false
	}
	switch typ {
	case 3:
		if (first>>1)&3 == 0 || len(body) < 2 {
			return 0, false
		}
		at := 2 + int(binary.BigEndian.Uint16(body))
		if len(body) < at+2 {
			return 0, false
		}
		return uint64(binary.BigEndian.Uint16(body[at:])), true
	default:
		if len(body) < 2 {
			return 0, false
		}
		return uint64(binary.BigEndian.Uint16(body)), true
	}
}
