package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"iter"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sensorstorm/sensorstorm/operation"
	"github.com/sensorstorm/sensorstorm/spool"
	"github.com/sensorstorm/sensorstorm/statuspage"
	"github.com/sensorstorm/sensorstorm/topology"
)

// chromiumPath is the browser the status page's test drives: Debian's
// package chromium, which scripts/test.sh installs; SENSORSTORM_CHROMIUM
// names another.
func chromiumPath(t *testing.T) string {
	path := cmpOr(os.Getenv("SENSORSTORM_CHROMIUM"), "/usr/bin/chromium")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the status page's browser test needs Chromium at %s: install the Debian packages chromium and chromium-driver "+
			"(scripts/test.sh does, as root), or set SENSORSTORM_CHROMIUM: %v", path, err)
	}
	return path
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// announced is a stderr that hands on the status page's URL once the
// command printed it, as pattern's first group (default: replay's line).
type announced struct {
	mu      sync.Mutex
	buf     strings.Builder
	url     chan string
	sent    bool
	pattern *regexp.Regexp
}

var replayPageURL = regexp.MustCompile(`status page on (http://\S+)`)

func (a *announced) Write(b []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.buf.Write(b)
	pattern := a.pattern
	if pattern == nil {
		pattern = replayPageURL
	}
	if m := pattern.FindStringSubmatch(a.buf.String()); m != nil && !a.sent {
		a.sent = true
		a.url <- m[1]
	}
	return len(b), nil
}

func (a *announced) String() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.buf.String()
}

// metricValues reads the samples of the metric name by component from a
// Prometheus text exposition.
func metricValues(t *testing.T, url, name string) map[string]uint64 {
	t.Helper()
	res, err := http.Get(url)
	require.NoError(t, err)
	defer res.Body.Close()
	line := regexp.MustCompile(`^` + name + `\{component="([^"]+)"\} (\S+)$`)
	out := map[string]uint64{}
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if m := line.FindStringSubmatch(sc.Text()); m != nil {
			v, err := strconv.ParseFloat(m[2], 64)
			require.NoError(t, err)
			out[m[1]] = uint64(v)
		}
	}
	require.NoError(t, sc.Err())
	return out
}

// TestStatusPageInChromium replays the shipped recording, paced, with the
// status page, and checks the page in headless Chromium: the graph shows
// every component, its counts are those of /metrics, pause stops the
// event-time position and resume moves it on. It saves a screenshot in
// the test's artifact directory (go test -artifacts keeps it), and with
// SENSORSTORM_SCREENSHOT=FILE also there.
func TestStatusPageInChromium(t *testing.T) {
	chromium := chromiumPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	replayCtx, stopReplay := context.WithCancel(ctx)
	defer stopReplay()
	url, stderr, code := startPagedReplay(t, replayCtx, "--speed", "200")
	browser := startChromium(t, ctx, chromium)
	do, poll := browserSteps(t, browser)

	do("open the page", chromedp.Navigate(url), chromedp.WaitVisible(`#sensors`), chromedp.WaitVisible(`#graph [data-component="out"]`))

	components := evaluate[[]string](t, browser, `[...document.querySelectorAll("#graph [data-component]")].map(n => n.dataset.component)`)
	require.Equal(t, []string{"replay", "out"}, components, "the graph shows every component of the replay")
	poll("sensor plots", `document.querySelectorAll("#plots .plot polyline").length > 0`)
	require.Equal(t, "temperature", evaluate[string](t, browser, `document.getElementById("field").value`), "the main field first, not int_temp")
	axes := evaluate[[]string](t, browser, `(() => { const p = document.querySelector("#plots .plot"); return [p.querySelector(".xaxis").textContent, p.querySelector(".yaxis").textContent]; })()`)
	assert.Regexp(t, `^\d\d:\d\d:\d\devent time, UTC\d\d:\d\d:\d\d$`, axes[0], "a time axis")
	assert.Regexp(t, `^\d+(\.\d+)?\d+(\.\d+)?$`, axes[1], "a scale: the highest and lowest value")

	do("speed up", chromedp.Click(`#faster`))
	poll("doubled speed", `last && last.replay.speed === "400x" && document.getElementById("speed").textContent === "400x"`)

	// Paused, the counts stand still: the page must show what /metrics says.
	do("pause", chromedp.Click(`#pause`))
	poll("paused", `last && last.replay.paused`)
	var pageCounts, metricCounts map[string]uint64
	deadline := time.Now().Add(10 * time.Second)
	for {
		pairs := evaluate[map[string][2]uint64](t, browser, `Object.fromEntries([...document.querySelectorAll("#graph [data-component]")].map(n =>
			[n.dataset.component, [Number(n.querySelector('[data-field="in"]').dataset.value), Number(n.querySelector('[data-field="out"]').dataset.value)]]))`)
		pageCounts = map[string]uint64{}
		for c, p := range pairs {
			pageCounts[c+" in"], pageCounts[c+" out"] = p[0], p[1]
		}
		metricCounts = map[string]uint64{}
		for c, v := range metricValues(t, url+"metrics", "sensorstorm_particles_in_total") {
			metricCounts[c+" in"] = v
		}
		for c, v := range metricValues(t, url+"metrics", "sensorstorm_particles_out_total") {
			metricCounts[c+" out"] = v
		}
		if fmt.Sprint(pageCounts) == fmt.Sprint(metricCounts) || time.Now().After(deadline) {
			break
		}
		// The page shows the snapshot of the last second: wait for the next.
		wall := evaluate[int64](t, browser, `last.wall`)
		poll("the next update", fmt.Sprintf(`last.wall > %d`, wall))
	}
	require.Equal(t, metricCounts, pageCounts, "counts on the page and at /metrics")
	require.NotZero(t, pageCounts["out in"])

	paused := evaluate[string](t, browser, `document.getElementById("position").textContent`)
	wall := evaluate[int64](t, browser, `last.wall`)
	poll("two updates while paused", fmt.Sprintf(`last.wall > %d + 1500`, wall))
	still := evaluate[string](t, browser, `document.getElementById("position").textContent`)
	require.Equal(t, paused, still, "the event-time position while paused")

	shot, err := chromedp.Run(browser, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	saveScreenshot(t, shot)

	do("resume", chromedp.Click(`#resume`))
	poll("the position moves on", fmt.Sprintf(`document.getElementById("position").textContent > %q`, paused))

	// At the end the page shows the run's final state, not "disconnected".
	stopReplay()
	require.Equal(t, exitOK, <-code, stderr.String())
	poll("the final state", `document.getElementById("conn").textContent.startsWith("finished: ")`)
	final := evaluate[string](t, browser, `document.getElementById("conn").textContent`)
	assert.Regexp(t, `^finished: \d+ read, \d+ replayed, 0 late, 0 invalid(, \d+ read ahead and not replayed)?$`, final)
	read := regexp.MustCompile(`read=(\d+)`).FindStringSubmatch(stderr.String())
	require.NotNil(t, read)
	assert.Contains(t, final, "finished: "+read[1]+" read", "the page's final count is the summary's")
	shot, err = chromedp.Run(browser, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(t.ArtifactDir(), "status-page-finished.png"), shot, 0o644))
}

// startPagedReplay starts a replay of the shipped recording with a
// status page that may change it and extra flags, until ctx ends. It
// returns the page's URL, the replay's stderr and its exit code, once
// sent.
func startPagedReplay(t *testing.T, ctx context.Context, extra ...string) (string, *announced, <-chan int) {
	t.Helper()
	stderr := &announced{url: make(chan string, 1)}
	out := filepath.Join(t.TempDir(), "out.lp")
	code := make(chan int, 1)
	args := append([]string{"replay", "--http-addr", "127.0.0.1:0", "--http-control", "--out", out}, extra...)
	go func() { code <- runIO(ctx, append(args, "../../testdata/library1-r1.lp"), nil, io.Discard, stderr) }()
	select {
	case url := <-stderr.url:
		return url, stderr, code
	case c := <-code:
		t.Fatalf("replay ended with %d before serving the page:\n%s", c, stderr)
	case <-ctx.Done():
		t.Fatalf("no status page announced:\n%s", stderr)
	}
	return "", nil, nil
}

// startChromium starts headless Chromium, until ctx ends or the test
// does, and returns the context of its first tab.
func startChromium(t *testing.T, ctx context.Context, chromium string) context.Context {
	t.Helper()
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 1100))
	t.Cleanup(cancelAlloc)
	browser, cancelBrowser := chromedp.NewContext(alloc)
	t.Cleanup(cancelBrowser)
	return browser
}

// browserSteps returns do, which runs steps in the browser, and poll,
// which waits until the page's expression is true.
func browserSteps(t *testing.T, browser context.Context) (do func(what string, steps ...chromedp.Action[chromedp.Void]), poll func(what, expr string)) {
	do = func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		require.NoError(t, chromedp.Do(browser, steps...), what)
	}
	poll = func(what, expr string) {
		t.Helper()
		_, err := chromedp.Run(browser, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(10*time.Second)))
		require.NoError(t, err, what)
	}
	return do, poll
}

// evaluate returns the value of the page's expression.
func evaluate[T any](t *testing.T, browser context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(browser, chromedp.Evaluate[T](expr))
	require.NoError(t, err, expr)
	return v
}

// saveScreenshot keeps png in the test's artifact directory and, with
// SENSORSTORM_SCREENSHOT, in that file.
func saveScreenshot(t *testing.T, png []byte) {
	t.Helper()
	path := filepath.Join(t.ArtifactDir(), "status-page.png")
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot: %s", path)
	if extra := os.Getenv("SENSORSTORM_SCREENSHOT"); extra != "" {
		require.NoError(t, os.WriteFile(extra, png, 0o644))
	}
}

// gateway is a source the status page has never heard of, a
// statuspage.Reporter: a sensor gateway on a serial line, with a backlog
// at its disk quota.
type gateway struct{}

func (gateway) Connections() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		_ = yield("/dev/ttyUSB0", "connected") && yield("/dev/ttyUSB1", "standby")
	}
}

func (gateway) Counters() iter.Seq2[string, int64] {
	return func(yield func(string, int64) bool) { _ = yield("polls", 1234) && yield("timeouts", 2) }
}

func (gateway) BacklogStats() (spool.BacklogStats, bool) {
	return spool.BacklogStats{
		Records: 120000, Bytes: 6 << 20, OnDisk: 115904, Oldest: time.Now().Add(-90 * time.Second).UnixNano(),
		Full: true, DrainRate: 2500, AddRate: 1000, CatchUp: 80 * time.Second,
	}, true
}

// TestStatusPageShowsAnyConnectorInChromium checks that the page shows a
// panel of a source it has never heard of, with its connections, its
// counters and its backlog, and loudly that it is at the disk quota. It
// saves a screenshot in the test's artifact directory.
func TestStatusPageShowsAnyConnectorInChromium(t *testing.T) {
	chromium := chromiumPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	topo, err := topology.New(topology.Config{})
	require.NoError(t, err)
	topo.AddSource("gateway", nil, topology.SourceConfig{})
	topo.AddBolt("out", operation.Stateless(operation.Func(nil)), topology.BoltConfig{}).Input("gateway", topology.Global())
	urls := make(chan string, 1)
	stop, err := serveStatus("127.0.0.1:0", statuspage.Config{Topology: topo, Title: "gateway", Instances: staticInstances(map[string][]any{"gateway": {gateway{}}})},
		func(url string) { urls <- url })
	require.NoError(t, err)
	defer stop()
	browser := startChromium(t, ctx, chromium)
	do, poll := browserSteps(t, browser)

	const panel = `document.querySelector('[data-connector="gateway"]')`
	do("open the page", chromedp.Navigate(<-urls), chromedp.WaitVisible(`[data-connector="gateway"] .backlog`))
	require.Equal(t, "gateway source", evaluate[string](t, browser, panel+`.querySelector("h2").textContent`))
	require.Equal(t, []string{"/dev/ttyUSB0: connected", "/dev/ttyUSB1: standby"},
		evaluate[[]string](t, browser, `[...`+panel+`.querySelectorAll(".connection")].map(c => c.textContent)`))
	require.Equal(t, map[string]string{"polls": "1234", "timeouts": "2"},
		evaluate[map[string]string](t, browser, `Object.fromEntries([...`+panel+`.querySelectorAll("[data-counter]")].map(b => [b.dataset.counter, b.textContent]))`))
	field := func(name string) string {
		return evaluate[string](t, browser, panel+`.querySelector('[data-backlog="`+name+`"]').textContent`)
	}
	poll("the backlog", panel+`.querySelector('[data-backlog="messages"]').textContent === "120000 (6.0 MiB)"`)
	require.Equal(t, "115904", field("on_disk"))
	require.Equal(t, "1.5 min", field("age"))
	require.Equal(t, "2.5k/s (in 1.0k/s)", field("drain"))
	require.Equal(t, "1.3 min", field("catch_up"))
	do("the quota, loudly", chromedp.WaitVisible(`[data-connector="gateway"] .quota`))
	require.Contains(t, evaluate[string](t, browser, panel+`.querySelector(".quota").textContent`), "disk quota")

	shot, err := chromedp.Run(browser, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	path := filepath.Join(t.ArtifactDir(), "status-page-connector.png")
	require.NoError(t, os.WriteFile(path, shot, 0o644))
	t.Logf("screenshot: %s", path)
}

// staticInstances returns the Config.Instances of a status page for a
// topology whose components are made before it runs: m's instances by
// component.
func staticInstances(m map[string][]any) func(string) []any {
	return func(name string) []any { return m[name] }
}
