package checkpoint

import (
	"fmt"

	"github.com/sensorstorm/sensorstorm/state"
)

// manifestVersion is the version of the manifest's form.
const manifestVersion = 1

// MarshalBinary encodes m as the Stores of this module write it. It never
// fails.
func (m Manifest) MarshalBinary() ([]byte, error) {
	var w state.Writer
	w.PutUvarint(manifestVersion)
	w.PutUvarint(m.ID)
	w.PutLen(len(m.Instances))
	for _, in := range m.Instances {
		w.PutString(in)
	}
	w.PutBytes(m.Data)
	return w.Bytes(), nil
}

// UnmarshalBinary decodes a manifest that MarshalBinary encoded. Its
// error is a *CorruptError whose Offset is in b and whose File is empty,
// for the Store to name.
func (m *Manifest) UnmarshalBinary(b []byte) error {
	r := state.NewReader(b)
	if v := r.ReadUvarint(); r.Err() == nil && v != manifestVersion {
		r.Fail(fmt.Errorf("%w: manifest version %d", ErrFormat, v))
	}
	*m = Manifest{ID: r.ReadUvarint()}
	if n := r.ReadLen(); n > 0 {
		m.Instances = make([]string, n)
		for i := range m.Instances {
			m.Instances[i] = r.ReadString()
		}
	}
	m.Data = r.ReadBytes()
	if r.Err() == nil && r.Len() > 0 {
		r.Fail(fmt.Errorf("%w: bytes past the manifest", ErrFormat))
	}
	if err := r.Err(); err != nil {
		return &CorruptError{Offset: int64(r.Offset()), Err: err}
	}
	return nil
}

// decodeManifest decodes the manifest of checkpoint id from b.
func decodeManifest(b []byte, id uint64) (Manifest, *CorruptError) {
	var m Manifest
	if err := m.UnmarshalBinary(b); err != nil {
		return Manifest{}, err.(*CorruptError)
	}
	if m.ID != id {
		return Manifest{}, &CorruptError{Err: fmt.Errorf("%w: manifest of checkpoint %d", ErrFormat, m.ID)}
	}
	return m, nil
}
