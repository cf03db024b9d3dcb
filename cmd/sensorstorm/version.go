package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
)

const versionUsage = `usage: sensorstorm version

Prints the module version of sensorstorm ("devel" when built from a
checkout), the VCS revision it was built from (with "+dirty" when the work
tree had changes) and its time, the Go version and the platform.
`

// version prints the build information.
func version(_ context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("version", versionUsage, stderr)
	rest, code, ok := c.parse(args, stdout)
	if !ok {
		return code
	}
	if len(rest) > 0 {
		return c.usageError("no arguments expected, got %q", rest)
	}
	fmt.Fprintln(stdout, versionLine(debug.ReadBuildInfo()))
	return exitOK
}

// versionLine describes a build: "sensorstorm VERSION REVISION GO OS/ARCH",
// where a build from a checkout, whose module version is "(devel)", says
// devel, and a build without VCS information (-buildvcs=false, or outside
// a git checkout) says so rather than show an empty revision.
func versionLine(info *debug.BuildInfo, ok bool) string {
	if !ok {
		return "sensorstorm (no build information)"
	}
	v := info.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	var rev, modified, when, goos, goarch string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = " " + s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+dirty"
			}
		case "GOOS":
			goos = s.Value
		case "GOARCH":
			goarch = s.Value
		}
	}
	if rev == "" {
		rev, when = "(revision unknown: built with -buildvcs=false or outside a git checkout)", ""
	}
	platform := ""
	if goos != "" {
		platform = " " + goos + "/" + goarch
	}
	return fmt.Sprintf("sensorstorm %s %s%s%s %s%s", v, rev, modified, when, info.GoVersion, platform)
}
