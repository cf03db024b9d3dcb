// Package particle defines the unit of data that flows through sensorstorm.
//
// A Particle is one timestamped record: event time in nanoseconds since the
// Unix epoch, the origin and sequence number that make its position in a
// stream deterministic, and either a sensor payload in the line-protocol
// model (measurement, tags, typed fields) or a meta payload (a control
// message such as a timer tick or end of stream, see package metaparticle).
//
// Particles are plain values: copying one is cheap and shares its tag and
// field slices, which must therefore be treated as read-only once the
// particle has been emitted.
//
// The package also holds the line-protocol codec ([Decoder], [Encoder]) and
// the typed mapping between Go structs and particles ([Schema]), so that
// operations can be written on user types without reflection per particle.
//
// See DESIGN.md, "Time and order".
package particle
