package main

import (
	"context"
	"fmt"
	"io"
)

// runPipeline is being built (issue 7).
func runPipeline(_ context.Context, _ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "sensorstorm: run is not available yet")
	return exitError
}

// validatePipeline is being built (issue 7).
func validatePipeline(_ context.Context, _ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "sensorstorm: validate is not available yet")
	return exitError
}
