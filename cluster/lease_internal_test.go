package cluster

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

// scriptedLeases answers the lease renewals with errs in turn, then with
// success, and ends the renewals after the last answer of script.
type scriptedLeases struct {
	jetstream.KeyValue
	errs []error
	stop context.CancelFunc

	mu    sync.Mutex
	calls int
}

func (s *scriptedLeases) Update(_ context.Context, _ string, _ []byte, rev uint64) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.calls > len(s.errs) {
		s.stop()
		return rev + 1, nil
	}
	return 0, s.errs[s.calls-1]
}

// A renewal that fails is tried again while the lease surely lasts; a
// lease another worker took, or one that may have expired, is lost.
func TestRenewLeaseRidesOutAFailure(t *testing.T) {
	transient := errors.New("nats: no responders available for request")
	mismatch := jetstream.ErrKeyRevisionMismatch
	for _, tc := range []struct {
		name string
		errs []error
		lost bool
	}{
		{"renewed", nil, false},
		{"one failure", []error{transient}, false},
		{"failures until it may have expired", []error{transient, transient}, true},
		{"taken by another worker", []error{mismatch}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			leases := &scriptedLeases{errs: tc.errs, stop: cancel}
			w := &Worker{cfg: Config{Worker: "w", LeaseTTL: 3 * time.Second, Logger: slog.New(slog.DiscardHandler)}, leases: leases}
			held, lose := context.WithCancelCause(ctx)
			defer lose(nil)
			w.renewLease(held, lose, "source.x.0", 1, nil)
			require.Equal(t, tc.lost, errors.Is(context.Cause(held), errLeaseLost), "cause %v", context.Cause(held))
		})
	}
}
