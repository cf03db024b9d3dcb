// Package proctest runs server processes that tests own: the broker and
// database servers the connectors' tests talk to. A Process is started
// from a binary and arguments, dies with the test process, is waited for
// until it accepts clients, and can be stopped, killed and started again
// with the same arguments. The packages that know a server's
// configuration (mosquittotest, influxtest) build on it.
package proctest

import (
	"bytes"
	"net"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Config describes a Process.
type Config struct {
	// Name prefixes the failures the Process reports, such as
	// "mosquittotest: mosquitto".
	Name string
	// Binary is the path of the program; Args its arguments.
	Binary string
	Args   []string
	// Ready reports whether the process accepts clients: Start polls it.
	Ready func() bool
	// StartTimeout bounds how long Start waits for Ready.
	StartTimeout time.Duration
}

// Process is a server process owned by a test. Its methods are safe for
// concurrent use.
type Process struct {
	t   testing.TB
	cfg Config

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
	log  *LockedBuffer
}

// New returns a Process for cfg, not started, which is killed when the
// test ends.
func New(t testing.TB, cfg Config) *Process {
	p := &Process{t: t, cfg: cfg}
	t.Cleanup(p.Kill)
	return p
}

// Start starts the process and waits until it is ready, failing the test
// if it exits first or is not ready in time. It does nothing if the
// process is running.
func (p *Process) Start() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return
	}
	cmd := exec.Command(p.cfg.Binary, p.cfg.Args...)
	dieWithParent(cmd)
	log := new(LockedBuffer)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("%s: start %s: %v", p.cfg.Name, p.cfg.Binary, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait() // its exit is what done reports; Stop and Kill cause it
		close(done)
	}()
	deadline := time.Now().Add(p.cfg.StartTimeout)
	for !p.cfg.Ready() {
		select {
		case <-done:
			p.t.Fatalf("%s exited at start: %s", p.cfg.Name, strings.TrimSpace(log.String()))
		default:
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill() // the test fails anyway; done tells when it is gone
			<-done
			p.t.Fatalf("%s not ready after %v: %s", p.cfg.Name, p.cfg.StartTimeout, log.String())
		}
		time.Sleep(10 * time.Millisecond) // polling a process's start, not timing
	}
	p.cmd, p.done, p.log = cmd, done, log
}

// Stop stops the process with SIGTERM and waits for it to exit; one
// still running after stopTimeout is killed (a broker that missed the
// signal while it started must not hang the test). It does nothing if the
// process is not running.
func (p *Process) Stop() { p.signal(syscall.SIGTERM) }

// stopTimeout bounds the wait for a process told to stop.
const stopTimeout = 20 * time.Second

// Kill stops the process with SIGKILL. It does nothing if the process is
// not running.
func (p *Process) Kill() { p.signal(syscall.SIGKILL) }

func (p *Process) signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return
	}
	// A process that exited by itself refuses the signal: done is closed
	// either way.
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		p.t.Logf("%s: still running %v after %v: killing it", p.cfg.Name, stopTimeout, sig)
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	p.cmd, p.done = nil, nil
}

// Log returns what the running or last process wrote.
func (p *Process) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.log == nil {
		return ""
	}
	return p.log.String()
}

// Listening returns a Ready that reports whether addr accepts TCP
// connections.
func Listening(addr string) func() bool {
	return func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false
		}
		c.Close()
		return true
	}
}

// LockedBuffer collects a process's output while the test reads it: a
// bytes.Buffer safe for concurrent Write and String. The zero value is
// ready to use.
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends b to the buffer.
func (l *LockedBuffer) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(b)
}

// String returns what was written so far.
func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
