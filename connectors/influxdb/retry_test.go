package influxdb_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/influxdb"
	"github.com/sensorstorm/sensorstorm/connectortest"
	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/streamclock"
)

// TestSinkRetryAfter: a server that answers 429 or 503 with Retry-After
// is not written to again before that time has passed on the wall clock;
// nothing is acknowledged or failed meanwhile, and the batch is
// acknowledged once it answered 204.
func TestSinkRetryAfter(t *testing.T) {
	for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			var requests atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				if requests.Add(1) == 1 {
					w.Header().Set("Retry-After", "2")
					http.Error(w, `{"error":"busy"}`, status)
					return
				}
				w.WriteHeader(http.StatusNoContent)
			}))
			defer srv.Close()
			wall := streamclock.NewFake(time.Unix(1_700_000_000, 0))
			sink := newSink(t, influxdb.Config{URL: srv.URL + "/write?db=x", Wall: wall})
			ctx := context.Background()
			var out connectortest.Emitter
			for _, p := range readings(3) {
				require.NoError(t, sink.Process(ctx, p, &out))
			}
			steps := []struct {
				advance  time.Duration
				requests int64
				acked    int
			}{
				{0, 1, 0},
				{time.Second, 1, 0},
				{time.Second, 2, 3},
			}
			for i, st := range steps {
				wall.Advance(st.advance)
				err := sink.Flush(ctx, &out)
				if st.acked == 0 {
					assert.ErrorIs(t, err, operation.ErrDestination, "step %d", i)
					se, ok := errors.AsType[*influxdb.ServerError](err)
					require.True(t, ok, "step %d: %v", i, err)
					assert.Equal(t, status, se.StatusCode)
					assert.Equal(t, 2*time.Second, se.RetryAfter)
				} else {
					assert.NoError(t, err, "step %d", i)
				}
				assert.Equal(t, st.requests, requests.Load(), "step %d", i)
				assert.Equal(t, st.acked, out.Acked, "step %d", i)
				assert.Empty(t, out.Failed, "step %d", i)
			}
		})
	}
}
