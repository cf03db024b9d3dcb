package replay

import (
	"fmt"
	"strconv"
	"time"
)

// ParseInstant parses a bound of the replayed range (Config.From or
// Config.To): RFC 3339, such as 2006-11-13T18:00:00Z, or nanoseconds since
// the Unix epoch.
func ParseInstant(s string) (time.Time, error) {
	if ns, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(0, ns).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("want RFC 3339 (2006-11-13T18:00:00Z) or epoch nanoseconds, got %q", s)
	}
	return t, nil
}
