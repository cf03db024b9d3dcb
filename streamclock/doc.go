// Package streamclock maps wall time to event time.
//
// Every bolt instance reads time from a stream clock: live it is the wall
// clock, in a replay it runs at the replay speed from the replay's start,
// and unpaced ("as fast as possible") it follows the highest event time the
// instance has seen. Idle timeouts, processing-time timers and the far-future
// bound of the synchronization buffer all use it, so a replay at 1000x
// behaves like the live run, only faster.
//
// Wall time itself comes from a [Wall], which tests replace with a [Fake].
//
// See DESIGN.md, "Stream clock and replay".
package streamclock
