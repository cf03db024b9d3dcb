package httpwrite

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStopping checks the answers of a source that is stopping: writes
// get 503 with Retry-After, so that clients write again to the next
// process, and the health check fails.
func TestStopping(t *testing.T) {
	s, err := NewSource(Config{StateDir: t.TempDir(), RetryAfter: 1500 * time.Millisecond})
	require.NoError(t, err)
	s.stopping.Store(true)
	h := s.handler()
	for _, target := range []string{"/api/v2/write?bucket=b", "/write?db=d"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, target, strings.NewReader("env t=1 1\n")))
		assert.Equal(t, http.StatusServiceUnavailable, rec.Code, target)
		assert.Equal(t, "2", rec.Header().Get("Retry-After"), target)
		assert.Contains(t, rec.Body.String(), "stopping", target)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/health", nil))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Contains(t, rec.Body.String(), `"status":"fail"`)
	assert.Equal(t, uint64(2), s.stats.Unavailable.Load())
}
