package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
)

const versionUsage = `usage: sensorstorm version

Prints the module version of sensorstorm, the VCS revision it was built
from (with "+dirty" when the work tree had changes) and the Go version.
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

// versionLine describes a build: "sensorstorm VERSION (REVISION) GO".
func versionLine(info *debug.BuildInfo, ok bool) string {
	if !ok {
		return "sensorstorm (no build information)"
	}
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+dirty"
			}
		}
	}
	if rev == "" {
		rev = "unknown revision"
	}
	return fmt.Sprintf("sensorstorm %s (%s%s) %s", v, rev, modified, info.GoVersion)
}
