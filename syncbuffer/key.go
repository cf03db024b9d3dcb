package syncbuffer

// Key is an item's position in release order: event time in nanoseconds,
// then origin, then sequence number. For a meta item, (Origin, Seq) is also
// its identity.
type Key struct {
	Time   int64
	Origin uint32
	Seq    uint64
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
