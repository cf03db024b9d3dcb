package topology

import (
	"fmt"
	"io"
	"reflect"
	"slices"
)

// closeSources closes the sources that are io.Closers once every instance
// has stopped and every callback returned: the run owns what its sources
// hold open for the trees that complete while it drains (an MQTT
// connection, a spool). A source a factory returned for several instances
// is closed once.
func (r *run) closeSources() []error {
	var (
		closed []io.Closer
		errs   []error
	)
	for _, s := range r.sources {
		c, ok := s.src.(io.Closer)
		if !ok || (reflect.TypeOf(c).Comparable() && slices.Contains(closed, c)) {
			continue
		}
		closed = append(closed, c)
		if err := c.Close(); err != nil {
			errs = append(errs, fmt.Errorf("source %s[%d]: close: %w", s.name, s.index, err))
		}
	}
	return errs
}
