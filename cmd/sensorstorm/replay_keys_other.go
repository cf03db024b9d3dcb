//go:build !linux

package main

import (
	"os"

	"golang.org/x/term"
)

// keysSupported reports whether keys can be read without breaking the
// output: raw mode also turns off the newline translation of a terminal
// on stdout.
func keysSupported() bool { return !term.IsTerminal(int(os.Stdout.Fd())) }

// keyMode puts the terminal fd in raw mode and returns the function that
// restores it.
func keyMode(fd int) (func(), error) {
	old, err := term.MakeRaw(fd)
	if err != nil {
		return nil, err
	}
	return func() { _ = term.Restore(fd, old) }, nil
}
