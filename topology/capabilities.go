package topology

import (
	"fmt"
	"slices"

	"github.com/sensorstorm/sensorstorm/operation"
)

// capabilities are the optional interfaces of an instance's operation,
// found once when the operation is made rather than at every call; nil
// where it has none.
type capabilities struct {
	meta      operation.MetaHandler
	watermark operation.WatermarkHandler
	hold      operation.OutputHolder
	tick      operation.TickHandler
	flush     operation.Flusher
	snapshot  operation.Snapshotter
	commit    operation.Committer
	span      operation.Spanner
}

// newOperation makes the instance's operation, and finds what it can do.
func (b *boltInstance) newOperation() (operation.Operation, capabilities) {
	op := b.factory()
	return op, capabilitiesOf(op)
}

func capabilitiesOf(op operation.Operation) capabilities {
	var c capabilities
	c.meta, _ = op.(operation.MetaHandler)
	c.watermark, _ = op.(operation.WatermarkHandler)
	c.hold, _ = op.(operation.OutputHolder)
	c.tick, _ = op.(operation.TickHandler)
	c.flush, _ = op.(operation.Flusher)
	c.snapshot, _ = op.(operation.Snapshotter)
	c.commit, _ = op.(operation.Committer)
	c.span, _ = op.(operation.Spanner)
	return c
}

// names lists the interfaces c has.
func (c capabilities) names() []string {
	var names []string
	for _, h := range []struct {
		name string
		has  bool
	}{
		{"MetaHandler", c.meta != nil}, {"WatermarkHandler", c.watermark != nil}, {"OutputHolder", c.hold != nil},
		{"TickHandler", c.tick != nil}, {"Flusher", c.flush != nil}, {"Snapshotter", c.snapshot != nil},
		{"Committer", c.commit != nil}, {"Spanner", c.span != nil},
	} {
		if h.has {
			names = append(names, h.name)
		}
	}
	return names
}

// checkWrapped reports an operation that wraps another without one of
// the optional interfaces of what it wraps: the engine would never call
// it, and a window would never close, a checkpoint never hold its state.
func checkWrapped(op operation.Operation) error {
	for {
		w, ok := op.(operation.Wrapper)
		if !ok {
			return nil
		}
		inner := w.Unwrap()
		if inner == nil {
			return nil
		}
		outer := capabilitiesOf(op).names()
		for _, name := range capabilitiesOf(inner).names() {
			if !slices.Contains(outer, name) {
				return fmt.Errorf("%T wraps %T, an operation.%s, without implementing it", op, inner, name)
			}
		}
		op = inner
	}
}
