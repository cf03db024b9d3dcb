//go:build linux

package netnstest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

// networks numbers the networks of this process, so that tests running
// at once get names of their own.
var networks atomic.Int32

// ours matches the names this package makes, capturing the pid of the
// process that made them.
var ours = regexp.MustCompile(`^sst(\d+)n\d+`)

// New makes a network of n machines (1 to 9) and deletes it when the test
// ends. It fails the test unless it runs as root with the ip command.
func New(t testing.TB, n int) *Network {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("netnstest: network namespaces need root: run the tests as root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Fatal("netnstest: the ip command is missing: install iproute2 (scripts/test.sh does as root)")
	}
	if n < 1 || n > 9 {
		t.Fatalf("netnstest: %d machines: 1 to 9", n)
	}
	deleteStale(t)
	prefix := fmt.Sprintf("sst%dn%d", os.Getpid(), networks.Add(1))
	subnet := freeSubnet(t)
	nw := &Network{Addr: subnet + "1", bridge: prefix + "b"}
	t.Cleanup(func() { nw.delete(t) })
	ip(t, "link", "add", nw.bridge, "type", "bridge")
	ip(t, "addr", "add", nw.Addr+"/24", "dev", nw.bridge)
	ip(t, "link", "set", nw.bridge, "up")
	for i := range n {
		m := &Machine{Name: fmt.Sprintf("%sm%d", prefix, i), Addr: fmt.Sprintf("%s%d", subnet, i+2), link: fmt.Sprintf("%sv%d", prefix, i)}
		ip(t, "netns", "add", m.Name)
		nw.Machines = append(nw.Machines, m)
		ip(t, "link", "add", m.link, "type", "veth", "peer", "name", "eth0", "netns", m.Name)
		ip(t, "link", "set", m.link, "master", nw.bridge, "up")
		ip(t, "-n", m.Name, "addr", "add", m.Addr+"/24", "dev", "eth0")
		ip(t, "-n", m.Name, "link", "set", "eth0", "up")
		ip(t, "-n", m.Name, "link", "set", "lo", "up")
	}
	return nw
}

// dieWithParent has the kernel kill cmd's process when this one dies:
// ip netns exec keeps the signal across its exec of the program.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// delete removes the links first: the kernel frees a deleted namespace's
// devices later, and the bridge's ends with them.
func (nw *Network) delete(t testing.TB) {
	t.Helper()
	for _, m := range nw.Machines {
		quietly("link", "del", m.link)
		if err := quietly("netns", "del", m.Name); err != nil {
			t.Errorf("netnstest: %v", err)
		}
	}
	if err := quietly("link", "del", nw.bridge); err != nil {
		t.Errorf("netnstest: %v", err)
	}
}

// quietly runs ip with args and returns its failure, if any.
func quietly(args ...string) error {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// deleteStale deletes the namespaces and links of processes that no
// longer run: a test killed before its cleanup leaves them.
func deleteStale(t testing.TB) {
	t.Helper()
	stale := func(name string) bool {
		m := ours.FindStringSubmatch(name)
		if m == nil {
			return false
		}
		pid, err := strconv.Atoi(m[1])
		return err == nil && errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
	}
	for _, l := range strings.Split(ip(t, "-o", "link", "show"), "\n") {
		// "7: sst123n1v0@if2: <BROADCAST,..."
		f := strings.Fields(l)
		if len(f) > 1 {
			if name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@"); stale(name) {
				t.Logf("netnstest: deleting %s, left by an earlier run", name)
				_ = quietly("link", "del", name) // gone with its peer, maybe
			}
		}
	}
	for _, l := range strings.Split(ip(t, "netns", "list"), "\n") {
		// "sst123n1m0 (id: 3)"
		if f := strings.Fields(l); len(f) > 0 && stale(f[0]) {
			t.Logf("netnstest: deleting namespace %s, left by an earlier run", f[0])
			if err := quietly("netns", "del", f[0]); err != nil {
				t.Fatalf("netnstest: %v", err)
			}
		}
	}
}

// freeSubnet returns the first three octets, dot included, of a /24 in
// 10.251.0.0/16 that no address of this namespace is on, starting from
// one the pid picks.
func freeSubnet(t testing.TB) string {
	t.Helper()
	addrs := ip(t, "-o", "-4", "addr", "show")
	for i := range 256 {
		subnet := fmt.Sprintf("10.251.%d.", (os.Getpid()+i)%256)
		if !strings.Contains(addrs, " "+subnet) {
			return subnet
		}
	}
	t.Fatal("netnstest: no free subnet in 10.251.0.0/16")
	return ""
}
