package httpwrite_test

import (
	"fmt"
	"maps"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/httpwrite"
)

// The source reports its address and counters as a status page reads
// them (statuspage.Reporter).
func TestConnectionsAndCounters(t *testing.T) {
	idle, err := httpwrite.NewSource(httpwrite.Config{StateDir: t.TempDir(), Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"127.0.0.1:0": "starting"}, maps.Collect(idle.Connections()), "not listening before Run")

	srv := startServer(t, httpwrite.Config{Token: "secret"}, nil)
	require.Equal(t, map[string]string{srv.src.Addr().String(): "listening"}, maps.Collect(srv.src.Connections()))
	auth := http.Header{"Authorization": {"Token secret"}}
	body := fmt.Appendf(nil, "env t=1 %d\nenv t=\nenv t=2 %d\n", time.Now().UnixNano(), time.Now().UnixNano())
	res, _ := post(t, "POST", srv.url+"/api/v2/write?bucket=b", auth, body)
	require.Equal(t, http.StatusBadRequest, res.StatusCode, "a partial write")
	res, _ = post(t, "POST", srv.url+"/api/v2/write?bucket=b", nil, body)
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
	require.Eventually(t, func() bool { return len(srv.particles()) == 2 }, 10*time.Second, 5*time.Millisecond)

	var names []string
	got := map[string]int64{}
	for name, v := range srv.src.Counters() {
		names = append(names, name)
		got[name] = v
	}
	require.Equal(t, []string{"requests", "accepted", "points", "invalid", "refused", "recovered"}, names, "in the order shown")
	require.Equal(t, map[string]int64{"requests": 2, "accepted": 1, "points": 2, "invalid": 1, "refused": 1, "recovered": 0}, got)
}
