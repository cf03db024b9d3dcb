package topology

import (
	"math"

	"github.com/sensorstorm/sensorstorm/particle"
)

// A Grouping decides which instances of a bolt receive a data particle. Meta
// particles ignore groupings: they go to every instance.
type Grouping interface {
	// Route appends to dst the instances, numbered from 0 to n-1, that
	// receive p, and returns the extended slice.
	Route(p *particle.Particle, n int, dst []int) []int
}

// Shuffle spreads particles evenly over the instances. It picks the instance
// from the particle's origin and sequence, so the spread is even and
// deterministic.
func Shuffle() Grouping { return shuffle{} }

type shuffle struct{}

func (shuffle) Route(p *particle.Particle, n int, dst []int) []int {
	return append(dst, int((uint64(p.Origin)+p.Seq)%uint64(n)))
}

// All sends every particle to every instance (broadcast).
func All() Grouping { return all{} }

type all struct{}

func (all) Route(_ *particle.Particle, n int, dst []int) []int {
	for i := range n {
		dst = append(dst, i)
	}
	return dst
}

// Global sends every particle to instance 0.
func Global() Grouping { return global{} }

type global struct{}

func (global) Route(_ *particle.Particle, _ int, dst []int) []int { return append(dst, 0) }

// Direct lets a function of the particle choose its instance; a result
// outside [0, n) wraps around.
func Direct(choose func(p *particle.Particle, n int) int) Grouping { return direct(choose) }

type direct func(p *particle.Particle, n int) int

func (d direct) Route(p *particle.Particle, n int, dst []int) []int {
	i := d(p, n) % n
	if i < 0 {
		i += n
	}
	return append(dst, i)
}

// Forward sends what instance i of a bolt emits to instance i of the
// receiving bolt only: the two bolts have the same parallelism, and each
// receiving instance has one input from the sending bolt, not one per
// sending instance, so that its sync buffer waits for no sibling. A bolt
// keyed like the one it takes from (Fields on the same names, with the
// same parallelism) gets the same particles from it as with Fields, and
// gives the same output. Only a bolt can send on a forward edge.
//
// With a Transport, a bolt whose inputs are all forward edges from one
// bolt is chained to it: its instances run in the process that runs their
// upstream instances, never across a process boundary (see
// topology/edge.Transport).
func Forward() Grouping { return forward{} }

type forward struct{}

// Route picks the one instance the wiring gives each sender.
func (forward) Route(_ *particle.Particle, _ int, dst []int) []int { return append(dst, 0) }

// isForward reports whether g is Forward, which the wiring, not Route,
// carries out.
func isForward(g Grouping) bool {
	_, ok := g.(forward)
	return ok
}

// Fields sends particles with equal values of the named tags or fields to
// the same instance. A name is looked up among the tags first, then among
// the fields; missing names hash as empty. The hash is FNV-1a over the
// values, so the same key reaches the same instance in every run and in
// every process.
func Fields(names ...string) Grouping { return fields(names) }

type fields []string

func (f fields) Route(p *particle.Particle, n int, dst []int) []int {
	h := uint64(fnvOffset)
	for _, name := range f {
		if v, ok := p.Tag(name); ok {
			h = fnvString(h, v)
		} else if v, ok := p.Field(name); ok {
			h = fnvValue(h, v)
		}
		h = fnvByte(h, 0)
	}
	return append(dst, int(h%uint64(n)))
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvByte(h uint64, b byte) uint64 { return (h ^ uint64(b)) * fnvPrime }

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h = fnvByte(h, s[i])
	}
	return h
}

func fnvUint64(h, u uint64) uint64 {
	for i := 0; i < 8; i++ {
		h = fnvByte(h, byte(u>>(8*i)))
	}
	return h
}

func fnvValue(h uint64, v particle.Value) uint64 {
	switch v.Kind() {
	case particle.KindString:
		return fnvString(h, v.StringValue())
	case particle.KindFloat:
		return fnvUint64(h, math.Float64bits(v.FloatValue()))
	case particle.KindInt:
		return fnvUint64(h, uint64(v.IntValue()))
	case particle.KindUint:
		return fnvUint64(h, v.UintValue())
	case particle.KindBool:
		if v.BoolValue() {
			return fnvByte(h, 1)
		}
		return fnvByte(h, 2)
	}
	return h
}
