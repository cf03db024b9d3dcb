package main

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var controlURL = regexp.MustCompile(`replay: control on (http://\S+)`)

// replayPaused reads whether the replay is paused from a control
// endpoint's GET /status.
func replayPaused(t *testing.T, base string) bool {
	t.Helper()
	res, err := http.Get(base + "status")
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	var st struct{ Paused bool }
	require.NoError(t, json.NewDecoder(res.Body).Decode(&st))
	return st.Paused
}

// TestControlRefusesOtherOrigins runs a replay with --control and
// --http-control, and a page on another origin (localhost, another port)
// whose form posts to /pause as soon as it loads: in headless Chromium,
// the post pauses neither endpoint's replay, and a request naming a
// foreign Host is refused; the status page's own pause button still
// pauses it.
func TestControlRefusesOtherOrigins(t *testing.T) {
	chromium := chromiumPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	replayCtx, stopReplay := context.WithCancel(ctx)
	defer stopReplay()
	page, stderr, code := startPagedReplay(t, replayCtx, "--speed", "1", "--control", "127.0.0.1:0")
	m := controlURL.FindStringSubmatch(stderr.String())
	require.NotNil(t, m, "the control endpoint's address:\n%s", stderr)
	control := m[1] + "/"

	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<form id="f" method="POST" action="%s"></form><script>document.getElementById("f").submit()</script>`,
			html.EscapeString(r.URL.Query().Get("target")))
	}))
	defer attacker.Close()
	// Another site: localhost, where the replay is on 127.0.0.1.
	attackerURL := strings.Replace(attacker.URL, "127.0.0.1", "localhost", 1)

	browser := startChromium(t, ctx, chromium)
	do, poll := browserSteps(t, browser)
	for _, tc := range []struct{ name, base string }{
		{"--control", control},
		{"--http-control", page},
	} {
		target := tc.base + "pause"
		do(tc.name+": the other origin's page", chromedp.Navigate(attackerURL+"/?target="+target))
		poll(tc.name+": the form posted", fmt.Sprintf(`location.href === %q && document.readyState === "complete"`, target))
		body := evaluate[string](t, browser, `document.body.innerText`)
		assert.Contains(t, body, "cross-origin request detected", "%s: the answer to the form", tc.name)
		assert.False(t, replayPaused(t, control), "%s: a form from another origin paused the replay", tc.name)

		req, err := http.NewRequest(http.MethodPost, target, nil)
		require.NoError(t, err)
		req.Host = "evil.example"
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = res.Body.Close()
		assert.Equal(t, http.StatusForbidden, res.StatusCode, "%s: a request for Host evil.example (DNS rebinding)", tc.name)
		assert.False(t, replayPaused(t, control), "%s: a request for Host evil.example paused the replay", tc.name)
	}

	do("open the status page", chromedp.Navigate(page), chromedp.WaitVisible(`#pause`))
	do("pause", chromedp.Click(`#pause`))
	poll("paused", `last && last.replay.paused`)
	assert.True(t, replayPaused(t, control), "the status page's own button")

	stopReplay()
	require.Equal(t, exitOK, <-code, stderr.String())
}
