package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	replaysrc "github.com/sensorstorm/sensorstorm/connectors/replay"
	"github.com/sensorstorm/sensorstorm/streamclock"
)

// progressEvery is how often the progress bar is redrawn.
const progressEvery = 200 * time.Millisecond

// terminal is replay's user interface on a terminal: a progress bar on
// stderr and keys on stdin. Both are off when stderr is not a terminal,
// so that logs, pipes and tests see nothing of them.
type terminal struct {
	stderr io.Writer
	on     bool // stderr is a terminal
	keys   bool // and so is stdin

	mu  sync.Mutex // guards bar: the logger and the progress goroutine share it
	bar *progressbar.ProgressBar
	eta eta
}

// newTerminal returns the terminal interface on stderr; keys are off when
// standard input is data (dataOnStdin).
func newTerminal(stderr io.Writer, quiet, dataOnStdin bool) *terminal {
	t := &terminal{stderr: stderr}
	if f, ok := stderr.(*os.File); ok && !quiet && term.IsTerminal(int(f.Fd())) {
		t.on = true
		t.keys = !dataOnStdin && term.IsTerminal(int(os.Stdin.Fd())) && keysSupported()
	}
	return t
}

// logWriter returns the writer for log lines: on a terminal it clears the
// bar first, which the next update draws again.
func (t *terminal) logWriter() io.Writer {
	if !t.on {
		return t.stderr
	}
	return writerFunc(func(b []byte) (int, error) {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.bar != nil {
			_ = t.bar.Clear()
		}
		return t.stderr.Write(b)
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// start shows progress and reads keys until the returned function is
// called; quit is called on the quit key.
func (t *terminal) start(ctx context.Context, src *replaysrc.Source, quit func()) func() {
	if !t.on {
		return func() {}
	}
	stopKeys := func() {}
	if t.keys {
		stopKeys = t.readKeys(src, quit)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(progressEvery)
		defer tick.Stop()
		var lastN uint64
		var lastPos time.Time
		lastT := time.Now()
		var rate, eventRate float64
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case now := <-tick.C:
				st := src.Status()
				if dt := now.Sub(lastT).Seconds(); dt > 0 {
					// A moving average keeps the rate readable.
					rate = 0.7*rate + 0.3*float64(st.Emitted-lastN)/dt
					if !lastPos.IsZero() && !st.Paused {
						eventRate = 0.7*eventRate + 0.3*float64(st.Position.Sub(lastPos))/dt
					}
				}
				lastN, lastPos, lastT = st.Emitted, st.Position, now
				t.update(st, rate, eventRate)
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		stopKeys()
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.bar != nil {
			_ = t.bar.Finish()
			t.bar = nil
		}
	}
}

// permille is the bar's maximum when it shows the event-time position.
const permille = 1000

// newBar returns the progress bar for a replay with status st: it follows
// the event-time position from the first record to the last when that
// span is known, with the ETA of eta; else the bytes read, which run ahead
// of the replay by the read-ahead, with the bar's own estimate.
func (t *terminal) newBar(st replaysrc.Status) *progressbar.ProgressBar {
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(t.stderr),
		progressbar.OptionSetWidth(24),
		progressbar.OptionSetSpinnerChangeInterval(0),
		progressbar.OptionClearOnFinish(),
	}
	if spanKnown(st) {
		// The bar would extrapolate its percent over wall time, which
		// knows nothing of the speed, the gaps in a recording or a pause.
		opts = append(opts, progressbar.OptionSetPredictTime(false), progressbar.OptionSetElapsedTime(false))
		return progressbar.NewOptions64(permille, opts...)
	}
	return progressbar.NewOptions64(-1, append(opts, progressbar.OptionSetPredictTime(true), progressbar.OptionShowBytes(true))...)
}

// eta estimates the wall time a replay needs to reach its last record.
type eta struct {
	left  time.Duration
	known bool
}

// next returns the estimate for status st, where eventRate is the event
// time replayed per wall second lately (in ns/s): the event time left
// divided by the speed when paced, so that at 1x it is the real time
// left, or by eventRate when unpaced. While paused it stands still.
func (e *eta) next(st replaysrc.Status, eventRate float64) string {
	if !st.Paused {
		left := st.Last.Sub(st.Position)
		switch {
		case st.Position.IsZero() || !spanKnown(st):
			e.known = false
		case st.Speed != replaysrc.Max:
			e.left, e.known = time.Duration(float64(max(left, 0))/float64(st.Speed)), true
		case eventRate > 0:
			e.left, e.known = time.Duration(float64(max(left, 0))/eventRate*float64(time.Second)), true
		default:
			e.known = false
		}
	}
	if !e.known {
		return "ETA -"
	}
	return "ETA " + e.left.Round(time.Second).String()
}

// spanKnown tells whether st has the event-time span of the replay.
func spanKnown(st replaysrc.Status) bool {
	return !st.First.IsZero() && st.Last.After(st.First)
}

// eventProgress returns how far st's position is from the first record
// to the last, in thousandths.
func eventProgress(st replaysrc.Status) int64 {
	if st.Position.IsZero() {
		return 0
	}
	f := float64(st.Position.Sub(st.First)) / float64(st.Last.Sub(st.First))
	return int64(max(0, min(1, f)) * permille)
}

// update draws the bar: the event-time position, the speed, the rate, and
// the percent and ETA of the event-time position (or of the bytes read);
// eventRate is the event time replayed per wall second lately. The bar
// starts with the first particle, once the files were opened and their
// span scanned.
func (t *terminal) update(st replaysrc.Status, rate, eventRate float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.bar == nil {
		if st.Position.IsZero() {
			return
		}
		t.bar = t.newBar(st)
	}
	byEventTime := t.bar.GetMax64() == permille && spanKnown(st)
	if !byEventTime && st.BytesTotal > 0 && t.bar.GetMax64() != st.BytesTotal {
		t.bar.ChangeMax64(st.BytesTotal)
	}
	pos := "-"
	if !st.Position.IsZero() {
		pos = st.Position.Format("2006-01-02 15:04:05")
	}
	speed := st.Speed.String()
	if st.Paused {
		speed = "paused"
	}
	desc := fmt.Sprintf("%s  %s  %s/s", pos, speed, humanRate(rate))
	if byEventTime {
		desc += "  " + t.eta.next(st, eventRate)
	}
	t.bar.Describe(desc)
	if byEventTime {
		_ = t.bar.Set64(eventProgress(st))
		return
	}
	_ = t.bar.Set64(st.BytesRead)
}

func humanRate(r float64) string {
	switch {
	case r >= 1e6:
		return fmt.Sprintf("%.1fM", r/1e6)
	case r >= 1e3:
		return fmt.Sprintf("%.1fk", r/1e3)
	}
	return fmt.Sprintf("%.0f", r)
}

// readKeys puts the terminal in a mode that delivers each key at once and
// applies the keys to src until the returned function restores the
// terminal. The goroutine reading stdin cannot be interrupted; it ends
// with the process, which exits right after a replay.
func (t *terminal) readKeys(src *replaysrc.Source, quit func()) func() {
	fd := int(os.Stdin.Fd())
	restore, err := keyMode(fd)
	if err != nil {
		return func() {}
	}
	fmt.Fprint(t.stderr, "keys: + faster, - slower, space pause/resume, m max, 1 real time, q quit\n")
	go func() {
		b := make([]byte, 1)
		for {
			if n, err := os.Stdin.Read(b); err != nil || n == 0 {
				return
			}
			applyKey(b[0], src, quit)
		}
	}()
	return restore
}

// applyKey changes src as key asks.
func applyKey(key byte, src *replaysrc.Source, quit func()) {
	st := src.Status()
	switch key {
	case '+', '=':
		if st.Speed != replaysrc.Max {
			_ = src.SetSpeed(min(st.Speed*2, streamclock.MaxSpeed))
		}
	case '-', '_':
		if st.Speed == replaysrc.Max {
			_ = src.SetSpeed(streamclock.MaxSpeed)
		} else {
			_ = src.SetSpeed(max(st.Speed/2, streamclock.MinSpeed))
		}
	case ' ', 'p':
		if st.Paused {
			src.Resume()
		} else {
			src.Pause()
		}
	case 'm':
		_ = src.SetSpeed(replaysrc.Max)
	case '1':
		_ = src.SetSpeed(1)
	case 'q', 3: // 3 is ^C when the terminal does not make it a signal
		quit()
	}
}
