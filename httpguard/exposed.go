package httpguard

import (
	"log/slog"
	"net"
)

// Loopback reports whether addr, a listener's address, takes connections
// from this machine only. An unspecified address (0.0.0.0, [::]) takes
// them from everywhere.
func Loopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// WarnExposed logs a warning when endpoint, listening on addr, takes
// connections from beyond this machine while nothing authenticates its
// clients: anyone who reaches the address may use it. Call it once, when
// the endpoint starts listening.
func WarnExposed(logger *slog.Logger, endpoint string, addr net.Addr) {
	if Loopback(addr) {
		return
	}
	logger.Warn("listening beyond the loopback interface without a token: anyone who reaches the address can use the endpoint",
		"endpoint", endpoint, "addr", addr.String())
}
