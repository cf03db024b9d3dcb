package syncbuffer_test

import (
	"fmt"
	"math"
	"time"

	"github.com/sensorstorm/sensorstorm/syncbuffer"
)

type reading struct {
	key   syncbuffer.Key
	meta  bool
	value string
}

func ExampleBuffer() {
	buf, err := syncbuffer.New(syncbuffer.Config{Window: 10 * time.Second}, 2,
		func(r *reading) syncbuffer.Key { return r.key },
		func(r *reading) bool { return r.meta })
	if err != nil {
		panic(err)
	}
	sec := func(s int64) int64 { return s * int64(time.Second) }
	push := func(input int, r reading, now int64) {
		fmt.Printf("push %-5s from %d: %v\n", r.value, input, buf.Push(input, r, now))
	}
	release := func(now int64) {
		buf.Release(now, func(r reading) bool {
			fmt.Println("  release", r.value)
			return true
		})
	}

	key := func(t int64, origin uint32, seq uint64) syncbuffer.Key {
		return syncbuffer.Key{Time: sec(t), Origin: origin, Seq: seq}
	}
	push(0, reading{key: key(12, 0, 1), value: "a12"}, sec(12))
	push(1, reading{key: key(5, 1, 1), value: "b5"}, sec(12))
	push(0, reading{key: key(30, 0, 2), value: "a30"}, sec(30))
	push(1, reading{key: key(20, 1, 2), value: "b20"}, sec(30))
	release(sec(30))                                          // watermark: min(30s, 20s) - 10s - 1ns
	push(1, reading{key: key(3, 1, 3), value: "b3"}, sec(30)) // older than 20s - 10s
	tick := reading{key: key(25, 9, 1), meta: true, value: "tick"}
	push(0, tick, sec(30))
	push(1, tick, sec(30))
	buf.Advance(1, sec(28), math.MinInt64, sec(30)) // input 1 has come to 28s
	release(sec(30))
	buf.EndOfStream(0)
	buf.EndOfStream(1)
	release(sec(30))
	fmt.Printf("%+v\n", buf.Stats())
	// Output:
	// push a12   from 0: buffered
	// push b5    from 1: buffered
	// push a30   from 0: buffered
	// push b20   from 1: buffered
	//   release b5
	// push b3    from 1: late
	// push tick  from 0: buffered
	// push tick  from 1: duplicate
	//   release a12
	//   release b20
	//   release tick
	//   release a30
	// {Pushed:7 Released:5 Late:1 Invalid:0 Duplicate:1 Behind:0 Buffered:0 MaxReleased:30000000000 MetaRemembered:0}
}
