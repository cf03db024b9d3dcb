package mqtt

import (
	"fmt"
	"testing"

	"github.com/eclipse/paho.mqtt.golang/packets"
	"github.com/stretchr/testify/require"
)

func publishPacket(id uint16, payload string) *packets.PublishPacket {
	p := packets.NewControlPacket(packets.Publish).(*packets.PublishPacket)
	p.Qos, p.MessageID, p.TopicName, p.Payload = 1, id, "sensors/a", []byte(payload)
	return p
}

// Get hands out a copy of its own each time: marking one as a duplicate,
// as paho does after a reconnect, changes neither the packet put nor the
// next copy.
func TestPacketStoreGetReturnsACopy(t *testing.T) {
	s := newPacketStore()
	s.Open()
	put := publishPacket(7, "x=1")
	s.Put("o.7", put)

	got := s.Get("o.7").(*packets.PublishPacket)
	require.NotSame(t, put, got)
	require.Equal(t, put.Payload, got.Payload)
	require.Equal(t, put.MessageID, got.MessageID)
	require.Equal(t, put.TopicName, got.TopicName)
	got.Dup = true

	require.False(t, put.Dup)
	require.False(t, s.Get("o.7").(*packets.PublishPacket).Dup)
}

// key is an outbound key for odd ids, an inbound one for even ones.
func key(id uint16) string {
	if id%2 == 1 {
		return fmt.Sprintf("o.%d", id)
	}
	return fmt.Sprintf("i.%d", id)
}

// Inbound packets are kept as they are: paho never changes them.
func TestPacketStoreKeepsInboundPackets(t *testing.T) {
	s := newPacketStore()
	s.Open()
	in := publishPacket(4, "x=1")
	s.Put("i.4", in)
	require.Same(t, in, s.Get("i.4"))
}

func TestPacketStoreKeepsTheOrderOfPuts(t *testing.T) {
	s := newPacketStore()
	s.Open()
	for _, id := range []uint16{9, 4, 5, 2} {
		s.Put(key(id), publishPacket(id, "x=1"))
	}
	require.Equal(t, []string{"o.9", "i.4", "o.5", "i.2"}, s.All())

	s.Del("i.4")
	s.Put("i.4", publishPacket(4, "x=2"))
	require.Equal(t, []string{"o.9", "o.5", "i.2", "i.4"}, s.All(), "a packet put again is the newest")

	s.Close()
	require.Nil(t, s.All(), "closed")
	require.Nil(t, s.Get("o.9"))
	s.Put("o.10", publishPacket(10, "x=3"))
	s.Open()
	require.Equal(t, []string{"o.9", "o.5", "i.2", "i.4"}, s.All(), "closing keeps the session and takes nothing")

	s.Reset()
	require.Empty(t, s.All())
	require.Nil(t, s.Get("o.9"))
}
