//go:build race

package replay_test

// raceEnabled shrinks the largest inputs: the race detector makes them
// ten times slower.
const raceEnabled = true
