package mqtt

import (
	"bytes"
	"cmp"
	"slices"
	"strings"
	"sync"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/eclipse/paho.mqtt.golang/packets"
)

// packetStore is the client's session store, in memory, holding each
// outbound packet encoded: Get decodes a copy of its own. paho's
// MemoryStore hands out the packet it was given, and after a reconnect
// paho marks that packet as a duplicate while the packet may still be being
// written: a data race (eclipse/paho.mqtt.golang#703). Packets are encoded
// by Put, which paho calls before it hands a packet to the connection.
// Inbound packets are kept as they are: paho neither sends them again nor
// changes them, and a source stores one per message received.
//
// All lists the keys in the order they were put, so that what a reconnect
// sends again keeps its order.
type packetStore struct {
	mu     sync.Mutex
	open   bool
	next   uint64
	stored map[string]storedPacket
}

// storedPacket is an outbound packet encoded, or an inbound one.
// outboundPrefix starts the keys of outbound packets; inbound ones start
// with "i." (paho's Store documents both).
const outboundPrefix = "o."

type storedPacket struct {
	order   uint64
	encoded []byte
	inbound packets.ControlPacket
}

var _ paho.Store = (*packetStore)(nil)

func newPacketStore() *packetStore { return &packetStore{stored: map[string]storedPacket{}} }

// Open allows the store's use.
func (s *packetStore) Open() {
	s.mu.Lock()
	s.open = true
	s.mu.Unlock()
}

// Close refuses the store's use until Open; what it holds stays.
func (s *packetStore) Close() {
	s.mu.Lock()
	s.open = false
	s.mu.Unlock()
}

// Put stores p under key: encoded if it is outbound.
func (s *packetStore) Put(key string, p packets.ControlPacket) {
	sp := storedPacket{inbound: p}
	if strings.HasPrefix(key, outboundPrefix) {
		var b bytes.Buffer
		if err := p.Write(&b); err != nil {
			// Writing to memory fails only for a packet paho could not
			// send either.
			return
		}
		sp = storedPacket{encoded: b.Bytes()}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open {
		sp.order = s.next
		s.stored[key] = sp
		s.next++
	}
}

// Get returns a new copy of the packet stored under key, or nil.
func (s *packetStore) Get(key string) packets.ControlPacket {
	s.mu.Lock()
	sp, ok := s.stored[key]
	open := s.open
	s.mu.Unlock()
	if !ok || !open {
		return nil
	}
	if sp.encoded == nil {
		return sp.inbound
	}
	p, err := packets.ReadPacket(bytes.NewReader(sp.encoded))
	if err != nil {
		return nil
	}
	return p
}

// All returns the keys stored, oldest first.
func (s *packetStore) All() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.open {
		return nil
	}
	keys := make([]string, 0, len(s.stored))
	for k := range s.stored {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Compare(s.stored[a].order, s.stored[b].order) })
	return keys
}

// Del removes the packet stored under key.
func (s *packetStore) Del(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open {
		delete(s.stored, key)
	}
}

// Reset removes every packet.
func (s *packetStore) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.stored)
}
