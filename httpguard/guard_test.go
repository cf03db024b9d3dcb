package httpguard_test

import (
	"bytes"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sensorstorm/sensorstorm/httpguard"
)

func TestProtect(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	h := httpguard.Protect(ok, "sensors.example.net")
	for _, tc := range []struct {
		name, method, host string
		header             map[string]string
		want               int
	}{
		{"curl by IP address", "POST", "127.0.0.1:8089", nil, http.StatusNoContent},
		{"curl by IPv6 address", "POST", "[::1]:8089", nil, http.StatusNoContent},
		{"localhost", "POST", "localhost:8089", nil, http.StatusNoContent},
		{"a name under localhost", "POST", "status.localhost:8089", nil, http.StatusNoContent},
		{"a configured name, any case", "POST", "Sensors.Example.NET:8089", nil, http.StatusNoContent},
		{"DNS rebinding", "POST", "evil.example:8089", nil, http.StatusForbidden},
		{"DNS rebinding, a read", "GET", "evil.example:8089", nil, http.StatusForbidden},
		{"no Host", "POST", "", nil, http.StatusForbidden},
		{"the page's own button", "POST", "127.0.0.1:8088", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://127.0.0.1:8088"}, http.StatusNoContent},
		{"a form from another port", "POST", "127.0.0.1:8088", map[string]string{"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:9000"}, http.StatusForbidden},
		{"a form from another site", "POST", "127.0.0.1:8088", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, http.StatusForbidden},
		{"an old browser's form, Origin only", "POST", "127.0.0.1:8088", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"a read from another site", "GET", "127.0.0.1:8088", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusNoContent},
	} {
		r := httptest.NewRequest(tc.method, "/pause", nil)
		r.Host = tc.host
		for k, v := range tc.header {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		assert.Equal(t, tc.want, w.Code, "%s: %s", tc.name, w.Body)
	}
}

func TestWarnExposed(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		warn bool
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8086}, false},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 8086}, false},
		{&net.TCPAddr{IP: net.IPv4zero, Port: 8086}, true},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 8086}, true},
		{&net.TCPAddr{IP: net.IPv4(192, 168, 1, 5), Port: 8086}, true},
	} {
		var logs bytes.Buffer
		httpguard.WarnExposed(slog.New(slog.NewTextHandler(&logs, nil)), "write endpoint", tc.addr)
		assert.Equal(t, !tc.warn, httpguard.Loopback(tc.addr), "%v", tc.addr)
		if tc.warn {
			assert.Contains(t, logs.String(), "level=WARN msg=\"listening beyond the loopback interface without a token", "%v", tc.addr)
			assert.Contains(t, logs.String(), "addr="+tc.addr.String())
		} else {
			assert.Empty(t, logs.String(), "%v", tc.addr)
		}
	}
}
