// Package httpguard makes the HTTP endpoints a process serves safe to
// expose. It has three parts, each used by every listener the command
// starts (the InfluxDB write endpoint, the status page, the replay's
// control endpoint, the Prometheus metrics):
//
//   - [Listen] and [NewServer]: a listener that holds at most
//     Limits.MaxConns connections, more waiting in the kernel's backlog,
//     and a server whose clients must send a request's header and body
//     within read timeouts and may keep an idle connection only so long.
//     A client sending slowly, or many of them, cannot take the
//     process's descriptors, and a connection it holds is closed in
//     bounded time.
//   - [Protect]: a guard for endpoints that change a run. It refuses a
//     request whose Host is a name not configured (DNS rebinding: a page
//     whose own name resolves to 127.0.0.1) and a state-changing request
//     a browser sends from another origin (cross-site request forgery:
//     a form posted by any page the user visits), using the standard
//     library's http.CrossOriginProtection. Pages served by the endpoint
//     itself, and clients that are not browsers, pass.
//   - [WarnExposed]: one warning when an endpoint listens beyond the
//     loopback interface with nothing to authenticate its clients.
//
// What it is not: not authentication (an endpoint that needs it checks
// its own token, as connectors/httpwrite does) and not TLS (put a reverse
// proxy in front for HTTPS).
package httpguard
