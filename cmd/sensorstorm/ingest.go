package main

import (
	"context"
	"fmt"
	"io"
)

// ingest is being built (issue 5).
func ingest(_ context.Context, _ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "sensorstorm: ingest is not available yet")
	return exitError
}

// bench is being built (issue 5).
func bench(_ context.Context, _ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "sensorstorm: bench is not available yet")
	return exitError
}
