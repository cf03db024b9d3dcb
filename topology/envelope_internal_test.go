package topology

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// A sync buffer holds envelopes by value, and with a window it may hold
// millions: every byte of an envelope is a byte per particle held.
func TestEnvelopeSize(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(envelope{}), uintptr(144))
}

func TestAddMore(t *testing.T) {
	var e envelope
	assert.Empty(t, e.moreAnchors())
	e.addMore(anchor{root: 1})
	e.addMore(anchor{root: 2})
	assert.Equal(t, []anchor{{root: 1}, {root: 2}}, e.moreAnchors())
}
