// Package netnstest builds a small network of Linux network namespaces
// for a test: one namespace a "machine", each joined by a veth pair to a
// bridge in the test's own namespace, with an address on a private /24
// that the bridge shares, so that the test process reaches every machine.
// A machine's link can be cut and restored, which partitions it from the
// others while its processes go on running.
//
// Cutting sets the bridge's end of the machine's veth pair down: the
// machine's end loses its carrier and keeps its address and routes, so
// established TCP connections neither see an error nor a reset and resume
// by retransmission once the link is restored, as after a real partition,
// while new connections fail with "no route to host".
//
// It needs root and the ip command of iproute2; New fails the test
// otherwise, and on other systems than Linux. Every name it makes starts
// with "sst" and the test process's pid, short enough for the 15
// characters of an interface name; New deletes what a killed earlier run
// left under a pid that no longer runs, and the test's cleanup deletes
// what New made, also when the test fails.
package netnstest

import (
	"os/exec"
	"strings"
	"testing"
)

// Network is the bridge and the machines New made.
type Network struct {
	// Addr is the test process's IPv4 address on the bridge.
	Addr string
	// Machines are the namespaces, in order.
	Machines []*Machine
	bridge   string
}

// Machine is a network namespace with one link to the bridge.
type Machine struct {
	// Name is the namespace's name, for ip netns.
	Name string
	// Addr is the machine's IPv4 address.
	Addr string
	// link is the bridge's end of the machine's veth pair.
	link string
}

// Command returns a command that runs the program name with args inside
// the machine's namespace, with this process's environment. The program
// is killed when this process dies, so that a test killed on timeout
// leaves none behind.
func (m *Machine) Command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command("ip", append([]string{"netns", "exec", m.Name, name}, args...)...)
	dieWithParent(cmd)
	return cmd
}

// Cut cuts the machine off the network.
func (m *Machine) Cut(t testing.TB) {
	t.Helper()
	ip(t, "link", "set", m.link, "down")
}

// Restore reconnects the machine after Cut.
func (m *Machine) Restore(t testing.TB) {
	t.Helper()
	ip(t, "link", "set", m.link, "up")
}

// ip runs the ip command with args, failing the test with its output
// when it fails.
func ip(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("netnstest: ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
