package state_test

import (
	"fmt"

	"github.com/sensorstorm/sensorstorm/state"
)

func Example() {
	var w state.Writer
	w.PutString("sensor-7")
	w.PutVarint(-3)
	w.PutFloat64(21.5)
	w.PutBool(true)

	r := state.NewReader(w.Bytes())
	fmt.Println(r.ReadString(), r.ReadVarint(), r.ReadFloat64(), r.ReadBool(), r.Err())

	// A truncated input stops the Reader at the value it could not read.
	r = state.NewReader(w.Bytes()[:12])
	fmt.Println(r.ReadString(), r.ReadVarint(), r.ReadFloat64(), r.ReadBool())
	fmt.Println(r.Err())
	// Output:
	// sensor-7 -3 21.5 true <nil>
	// sensor-7 -3 0 false
	// state: at offset 10: state: truncated
}

// A map of per-sensor state written in the order of its keys, so that
// the same state gives the same bytes, and read back.
func ExamplePutMap() {
	counts := map[string]uint64{"sensor-9": 3, "sensor-1": 12}
	var w state.Writer
	state.PutMap(&w, counts, w.PutUvarint)

	r := state.NewReader(w.Bytes())
	var back map[string]uint64
	state.ReadMap(r, &back, func(key string) uint64 {
		n := r.ReadUvarint()
		fmt.Println(key, n)
		return n
	})
	fmt.Println(len(back), r.Err())
	// Output:
	// sensor-1 12
	// sensor-9 3
	// 2 <nil>
}
