package httpguard

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Protect returns h behind two checks, for endpoints that change a run:
//
//   - Host: the request must name the server by an IP address, by
//     localhost (or a name under .localhost), or by one of hosts (names
//     without port, matched ignoring case). A page served from any other
//     name, such as one an attacker's DNS points at 127.0.0.1, is
//     refused 403 (DNS rebinding), for every method.
//   - Origin: a POST, PUT, PATCH or DELETE a browser sends from another
//     origin is refused 403 (cross-site request forgery), by
//     http.CrossOriginProtection: Sec-Fetch-Site, else the Origin header
//     against Host. A page of the same origin, and a client that is not
//     a browser (curl sends neither header), pass.
func Protect(h http.Handler, hosts ...string) http.Handler {
	allowed := make(map[string]bool, len(hosts))
	for _, n := range hosts {
		allowed[strings.ToLower(n)] = true
	}
	sameOrigin := http.NewCrossOriginProtection().Handler(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if name := hostName(r.Host); !allowedHost(name, allowed) {
			http.Error(w, fmt.Sprintf("host %q not allowed: address this endpoint by IP address, localhost or a configured name", name), http.StatusForbidden)
			return
		}
		sameOrigin.ServeHTTP(w, r)
	})
}

// hostName returns the name of a Host header, without port or brackets.
func hostName(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
}

// allowedHost reports whether a browser can only have sent a request for
// name to this server: an IP address cannot be rebound, and localhost
// resolves to loopback without DNS.
func allowedHost(name string, allowed map[string]bool) bool {
	if name == "" {
		return false
	}
	if _, err := netip.ParseAddr(name); err == nil {
		return true
	}
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	return name == "localhost" || strings.HasSuffix(name, ".localhost") || allowed[name]
}
