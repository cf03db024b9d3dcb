package syncbuffer_test

import (
	"fmt"
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

	push(0, reading{key: syncbuffer.Key{Time: sec(12), Origin: 0, Seq: 1}, value: "a12"}, sec(12))
	push(1, reading{key: syncbuffer.Key{Time: sec(5), Origin: 1, Seq: 1}, value: "b5"}, sec(12))
	push(0, reading{key: syncbuffer.Key{Time: sec(30), Origin: 0, Seq: 2}, value: "a30"}, sec(30))
	tick := reading{key: syncbuffer.Key{Time: sec(25), Origin: 9, Seq: 1}, meta: true, value: "tick"}
	push(0, tick, sec(30))
	push(1, tick, sec(30)) // the copy from input 1 also shows it has reached 25s
	release(sec(30))       // watermark: min(30s, 25s) - 10s = 15s
	push(1, reading{key: syncbuffer.Key{Time: sec(3), Origin: 1, Seq: 2}, value: "b3"}, sec(30))
	buf.EndOfStream(0)
	buf.EndOfStream(1)
	release(sec(30))
	fmt.Printf("%+v\n", buf.Stats())
	// Output:
	// push a12   from 0: buffered
	// push b5    from 1: buffered
	// push a30   from 0: buffered
	// push tick  from 0: buffered
	// push tick  from 1: duplicate
	//   release b5
	//   release a12
	// push b3    from 1: late
	//   release tick
	//   release a30
	// {Pushed:6 Released:4 Late:1 Invalid:0 Duplicate:1 Buffered:0 MaxReleased:30000000000 MetaRemembered:0}
}
