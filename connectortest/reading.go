package connectortest

import (
	"regexp"
	"strconv"

	"github.com/sensorstorm/sensorstorm/particle"
)

// readingBase is the event time of reading 0: 2024-01-01T00:00:00Z.
const readingBase = 1704067200 * int64(1e9)

// Reading returns the reading numbered n that the suite sends: measurement
// "reading", tag sensor s0 to s3, integer field n, event time n
// milliseconds after 2024-01-01T00:00:00Z.
func Reading(n int) particle.Particle {
	return particle.Particle{
		Time:        readingBase + int64(n)*1e6,
		Measurement: "reading",
		Tags:        []particle.Tag{{Key: "sensor", Value: "s" + strconv.Itoa(n%4)}},
		Fields:      []particle.Field{{Key: "n", Value: particle.Int(int64(n))}},
	}
}

// Readings returns the readings numbered [from, to).
func Readings(from, to int) []particle.Particle {
	ps := make([]particle.Particle, 0, to-from)
	for n := from; n < to; n++ {
		ps = append(ps, Reading(n))
	}
	return ps
}

// Number returns the number of a reading made by Reading.
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
