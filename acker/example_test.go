package acker_test

import (
	"fmt"
	"time"

	"github.com/sensorstorm/sensorstorm/acker"
)

func ExampleTable() {
	tab, err := acker.NewTable(acker.Config{ProgressTimeout: time.Second})
	if err != nil {
		panic(err)
	}
	edges := acker.NewEdgeIDs()

	// A source particle goes to two bolts: the root has edges a and b.
	a, b := edges.Next(), edges.Next()
	root, _, _ := tab.Init(0, a^b)

	// The first bolt emits c anchored to a, then acks a.
	c := edges.Next()
	done, _ := tab.Update(1, root, a^c)
	fmt.Println("a acked, tree done:", done)
	done, _ = tab.Update(2, root, b)
	fmt.Println("b acked, tree done:", done)
	done, _ = tab.Update(3, root, c)
	fmt.Println("c acked, tree done:", done, "pending:", tab.Len())

	// An ack that arrives after the tree completed is refused.
	_, ok := tab.Update(4, root, c)
	fmt.Println("late ack accepted:", ok)

	// A tree whose edge is never acked times out.
	lost, _, _ := tab.Init(5, edges.Next())
	now := int64(2 * time.Second)
	tab.Expire(now, now, func(id acker.RootID, r acker.Reason) {
		fmt.Println("lost tree failed:", id == lost, r)
	})
	// Output:
	// a acked, tree done: false
	// b acked, tree done: false
	// c acked, tree done: true pending: 0
	// late ack accepted: false
	// lost tree failed: true timeout
}
