package ops

import (
	"github.com/sensorstorm/sensorstorm/state"
)

var _ state.Codec[*alignAcc] = (*aligner)(nil)

// EncodeState implements state.Codec: a bucket's measurement, the tags
// its readings share and the sensors' fields merged so far.
func (a *aligner) EncodeState(w *state.Writer, acc *alignAcc) error {
	w.PutBool(acc != nil)
	if acc == nil {
		return nil
	}
	w.PutString(acc.measurement)
	w.PutTags(acc.tags)
	w.PutFields(acc.fields)
	return nil
}

// DecodeState implements state.Codec.
func (a *aligner) DecodeState(r *state.Reader) (*alignAcc, error) {
	if !r.ReadBool() {
		return nil, r.Err()
	}
	acc := &alignAcc{measurement: r.ReadString(), tags: r.ReadTags(), fields: r.ReadFields()}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return acc, nil
}
