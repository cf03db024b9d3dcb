package connectortest

import (
	"regexp"
	"strconv"
	"time"

	"github.com/sensorstorm/sensorstorm/particle"
)

// readings makes the readings of a scenario: the one numbered n has
// measurement "reading", tag sensor s0 to s3, integer field n and event
// time n milliseconds after the scenario began, so that a live source's
// stream clock finds it current.
type readings struct{ base int64 }

func newReadings() readings { return readings{base: time.Now().UnixNano()} }

func (r readings) one(n int) particle.Particle {
	return particle.Particle{
		Time:        r.base + int64(n)*1e6,
		Measurement: "reading",
		Tags:        []particle.Tag{{Key: "sensor", Value: "s" + strconv.Itoa(n%4)}},
		Fields:      []particle.Field{{Key: "n", Value: particle.Int(int64(n))}},
	}
}

// probe returns a reading numbered -1 with the current time: probes sent
// one after the other must not share a timestamp, or none of them is
// released while they keep coming.
func probe() []particle.Particle { return newReadings().span(-1, 0) }

// span returns the readings numbered [from, to).
func (r readings) span(from, to int) []particle.Particle {
	ps := make([]particle.Particle, 0, to-from)
	for n := from; n < to; n++ {
		ps = append(ps, r.one(n))
	}
	return ps
}

// Number returns the number of a reading the suite sent: its field n.
func Number(p *particle.Particle) (int, bool) {
	for _, f := range p.Fields {
		if f.Key == "n" {
			if v, ok := f.Value.Number(); ok {
				return int(v), true
			}
		}
	}
	return 0, false
}

var lineNumber = regexp.MustCompile(`\bn=(-?\d+)i\b`)

// NumbersIn returns the numbers of the readings in line protocol text, in
// order, duplicates included: for harnesses whose destination holds line
// protocol.
func NumbersIn(text []byte) []int {
	var ns []int
	for _, m := range lineNumber.FindAllSubmatch(text, -1) {
		n, _ := strconv.Atoi(string(m[1]))
		ns = append(ns, n)
	}
	return ns
}
