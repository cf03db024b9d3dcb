package httpwrite_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/connectors/httpwrite"
	"github.com/sensorstorm/sensorstorm/connectortest"
	"github.com/sensorstorm/sensorstorm/httpguard"
)

// TestSlowClientsDoNotStopWrites opens many more connections than the
// server serves at a time, each sending a request that never ends: a
// real write made after them still succeeds, because the read timeouts
// close each slow connection and free its place, and each slow
// connection is closed by the server.
func TestSlowClientsDoNotStopWrites(t *testing.T) {
	const slow = 48 // six times MaxConns
	for _, tc := range []struct {
		name  string
		start string // what a slow client sends, and then nothing
	}{
		{"slow body", "POST /api/v2/write?bucket=b HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1048576\r\n\r\nenv t=1"},
		{"slow header", "POST /api/v2/write?bucket=b HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Len"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startServer(t, httpwrite.Config{
				Limits: httpguard.Limits{MaxConns: 8, ReadHeaderTimeout: 100 * time.Millisecond, ReadTimeout: 200 * time.Millisecond},
			}, nil)
			addr := strings.TrimPrefix(srv.url, "http://")
			conns := make([]net.Conn, 0, slow)
			for range slow {
				c, err := net.Dial("tcp", addr)
				require.NoError(t, err)
				t.Cleanup(func() { _ = c.Close() })
				_, err = io.WriteString(c, tc.start)
				require.NoError(t, err)
				conns = append(conns, c)
			}

			client := &http.Client{Timeout: 30 * time.Second}
			line := fmt.Sprintf("env t=2 %d\n", time.Now().UnixNano())
			resp, err := client.Post(srv.url+"/api/v2/write?bucket=b", "text/plain", strings.NewReader(line))
			require.NoError(t, err, "a real write behind %d slow clients", slow)
			_ = resp.Body.Close()
			require.Equal(t, http.StatusNoContent, resp.StatusCode)
			connectortest.WaitFor(t, 10*time.Second, "the point", func() bool { return len(srv.particles()) == 1 })

			for i, c := range conns {
				require.NoError(t, c.SetReadDeadline(time.Now().Add(30*time.Second)))
				_, err := io.Copy(io.Discard, c) // until the server closes it
				require.NoError(t, err, "slow connection %d", i)
			}
		})
	}
}
