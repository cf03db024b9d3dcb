package operation_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"pgregory.net/rapid"

	"github.com/sensorstorm/sensorstorm/metaparticle"
	"github.com/sensorstorm/sensorstorm/operation"
)

func TestTimers(t *testing.T) {
	var tm operation.Timers[string]
	tm.Set(metaparticle.EventTime, "a", 30)
	tm.Set(metaparticle.EventTime, "b", 10)
	tm.Set(metaparticle.EventTime, "a", 10)
	tm.Set(metaparticle.EventTime, "a", 10) // kept once
	tm.Set(metaparticle.StreamTime, "a", 5)
	assert.True(t, tm.Delete(metaparticle.EventTime, "a", 30))
	assert.False(t, tm.Delete(metaparticle.EventTime, "a", 30))
	next, ok := tm.Next(metaparticle.EventTime)
	assert.True(t, ok)
	assert.Equal(t, int64(10), next)

	var fired []string
	tm.Advance(metaparticle.EventTime, 100, func(k string, at int64) {
		fired = append(fired, k)
		if k == "b" {
			tm.Set(metaparticle.EventTime, "c", 50) // due in this call too
		}
	})
	assert.Equal(t, []string{"b", "a", "c"}, fired)
	assert.Equal(t, 1, tm.Len(metaparticle.StreamTime))
	assert.Zero(t, tm.Len(metaparticle.EventTime))
}

// Property: timers fire in order of time, then of setting, each once,
// against a plain list.
func TestTimersMatchReference(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var tm operation.Timers[int]
		type timer struct {
			key int
			at  int64
		}
		var model []timer // in the order set
		steps := rapid.IntRange(0, 200).Draw(rt, "steps")
		now := int64(0)
		for range steps {
			switch rapid.IntRange(0, 2).Draw(rt, "op") {
			case 0:
				tmr := timer{rapid.IntRange(0, 5).Draw(rt, "key"), now + int64(rapid.IntRange(0, 20).Draw(rt, "in"))}
				tm.Set(metaparticle.EventTime, tmr.key, tmr.at)
				dup := false
				for _, m := range model {
					dup = dup || m == tmr
				}
				if !dup {
					model = append(model, tmr)
				}
			case 1:
				tmr := timer{rapid.IntRange(0, 5).Draw(rt, "key"), now + int64(rapid.IntRange(0, 20).Draw(rt, "in"))}
				had := false
				for i, m := range model {
					if m == tmr {
						model = append(model[:i], model[i+1:]...)
						had = true
						break
					}
				}
				if tm.Delete(metaparticle.EventTime, tmr.key, tmr.at) != had {
					rt.Fatalf("delete %v: model says %v", tmr, had)
				}
			case 2:
				now += int64(rapid.IntRange(0, 10).Draw(rt, "advance"))
				var want []timer
				for at := int64(-1); ; {
					// The model: earliest time first, set order within it.
					best := -1
					for i, m := range model {
						if m.at <= now && (best < 0 || m.at < model[best].at) {
							best = i
						}
					}
					if best < 0 {
						break
					}
					at = model[best].at
					want = append(want, model[best])
					model = append(model[:best], model[best+1:]...)
					_ = at
				}
				var got []timer
				tm.Advance(metaparticle.EventTime, now, func(k int, at int64) { got = append(got, timer{k, at}) })
				if len(want) != len(got) {
					rt.Fatalf("fired %v, want %v", got, want)
				}
				for i := range want {
					if want[i] != got[i] {
						rt.Fatalf("fired %v, want %v", got, want)
					}
				}
			}
		}
		if tm.Len(metaparticle.EventTime) != len(model) {
			rt.Fatalf("len %d, want %d", tm.Len(metaparticle.EventTime), len(model))
		}
	})
}
