package syncbuffer

// Key is what the buffer reads of an item. Time, Origin and Seq are its
// position in release order: event time in nanoseconds, then origin, then
// sequence number. For a meta item, (Origin, Seq) is also its identity.
//
// High is the high-water mark of the item's input when it sent the item:
// the newest event time that input had sent by then, the item's own
// included. A data item is late when it is older than High minus the
// window. A High below Time counts as Time, so an item without one is
// judged by what its input delivered. High takes no part in the order.
type Key struct {
	Time   int64
	Origin uint32
	Seq    uint64
	High   int64
}

// Less reports whether a is released before b.
func (a Key) Less(b Key) bool {
	if a.Time != b.Time {
		return a.Time < b.Time
	}
	if a.Origin != b.Origin {
		return a.Origin < b.Origin
	}
	return a.Seq < b.Seq
}
