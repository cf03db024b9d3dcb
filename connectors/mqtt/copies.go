package mqtt

import (
	"hash/maphash"
	"sync"

	"github.com/sensorstorm/sensorstorm/spool"
)

// tailExtra is how many records beyond one sync's a source compares
// redelivered messages with: more than a broker holds unacknowledged
// (Mosquitto: 20 by default).
const tailExtra = 1024

// copies recognises the messages a broker sends again because the
// previous run was killed after making them durable and before
// acknowledging them: a redelivered message (the DUP flag) whose topic and
// payload are those of one of the previous run's last records not yet
// completed. Without it each such message would be taken twice. A new
// message identical to a recent one and redelivered too would be taken
// for a copy: readings carry their timestamp, which makes that a copy
// indeed.
type copies struct {
	mu   sync.Mutex
	seed maphash.Seed
	last map[uint64]int
}

// load notes the last records of the spool a previous run left, as many
// as one sync makes durable (maxBatch) and tailExtra more.
func (c *copies) load(sp *spool.Spool, maxBatch int) error {
	tailRecords := maxBatch + tailExtra
	c.seed = maphash.MakeSeed()
	var tail []uint64
	err := sp.PendingRecords(func(_ uint64, r spool.Record) error {
		tail = append(tail, c.key(r.Source, r.Payload))
		if len(tail) > 2*tailRecords {
			tail = append(tail[:0], tail[len(tail)-tailRecords:]...)
		}
		return nil
	})
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = make(map[uint64]int, min(len(tail), tailRecords))
	for _, k := range tail[max(0, len(tail)-tailRecords):] {
		c.last[k]++
	}
	return nil
}

func (c *copies) key(topic string, payload []byte) uint64 {
	var h maphash.Hash
	h.SetSeed(c.seed)
	h.WriteString(topic)
	h.WriteByte(0)
	h.Write(payload)
	return h.Sum64()
}

// take reports whether a redelivered message is a copy of one of the
// previous run's last records, and counts it off.
func (c *copies) take(topic string, payload []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.last) == 0 {
		return false
	}
	k := c.key(topic, payload)
	n := c.last[k]
	switch {
	case n == 0:
		return false
	case n == 1:
		delete(c.last, k)
	default:
		c.last[k] = n - 1
	}
	return true
}
