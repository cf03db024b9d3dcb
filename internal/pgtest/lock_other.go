//go:build !unix

package pgtest

// lockServer does nothing where the tests that restart the server do not
// run.
func lockServer(bool) (release func(), err error) { return func() {}, nil }
