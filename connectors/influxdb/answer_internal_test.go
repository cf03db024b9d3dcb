package influxdb

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sensorstorm/sensorstorm/particle"
)

// TestNamed reads the lines that answers of InfluxDB 1.x (as 1.6.7 words
// them), 2.x and sensorstorm's endpoint name in a batch of five lines.
func TestNamed(t *testing.T) {
	var ps []*particle.Particle
	var lines [][]byte
	for i, v := range []particle.Value{particle.Float(1), particle.String("x"), particle.Float(2), particle.Bool(true), particle.Uint(7)} {
		p := &particle.Particle{Time: int64(i + 1), Measurement: "m", Fields: []particle.Field{{Key: "v", Value: v}}}
		if i == 2 {
			p.Tags = []particle.Tag{{Key: "time", Value: "a"}}
		}
		line, err := particle.AppendLineProtocol(nil, p, particle.Nanosecond)
		if err != nil {
			t.Fatal(err)
		}
		ps, lines = append(ps, p), append(lines, line[:len(line)-1])
	}
	tests := []struct {
		name string
		body string
		bad  []int
		all  bool
	}{
		{"1.x unparsable", `{"error":"partial write: unable to parse 'm v=7u 5': invalid number dropped=0"}`, []int{4}, false},
		{"1.x two unparsable", `{"error":"partial write: unable to parse 'm v=\"x\" 2': bad\nunable to parse 'm v=7u 5': invalid number dropped=0"}`, []int{1, 4}, false},
		{"1.x type conflict", `{"error":"partial write: field type conflict: input field \"v\" on measurement \"m\" is type string, already exists as type float dropped=1"}`, []int{1}, false},
		{"1.x type conflict, more dropped", `{"error":"partial write: field type conflict: input field \"v\" on measurement \"m\" is type boolean, already exists as type float dropped=3"}`, []int{3}, false},
		{"1.x fewer dropped than fit", `{"error":"partial write: field type conflict: input field \"v\" on measurement \"m\" is type float, already exists as type string dropped=1"}`, nil, false},
		{"1.x invalid tag key", `{"error":"partial write: invalid tag key: input tag \"time\" on measurement \"m\" is invalid dropped=1"}`, []int{2}, false},
		{"1.x conflict without names", `{"error":"field type conflict"}`, nil, false},
		{"2.x numbered", `{"code":"invalid","message":"partial write has occurred, errors encountered on line(s): line 2: no field; line 5: invalid number"}`, []int{1, 4}, true},
		{"2.x numbered on lines", "{\"code\":\"invalid\",\"message\":\"failed to parse line protocol:\\nerrors encountered on line(s):\\nline 4: bad\"}", []int{3}, true},
		{"sensorstorm listed", `{"code":"invalid","message":"partial write error (3 written): 2 bad lines, the first at line 2:3: bad","line":2,"errors":[{"line":2,"column":3,"message":"bad"},{"line":4,"message":"bad"}]}`, []int{1, 3}, true},
		{"sensorstorm more than listed", `{"code":"invalid","message":"partial write error (2 written): 3 bad lines, the first at line 2:3: bad","errors":[{"line":2,"message":"bad"},{"line":4,"message":"bad"}]}`, []int{1, 3}, false},
		{"line out of range", `{"message":"line 9: bad"}`, nil, false},
		{"plain text", `bad request`, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := serverError(http.StatusBadRequest, http.Header{}, []byte(tt.body))
			bad, all := e.named(lines, ps)
			assert.ElementsMatch(t, tt.bad, bad)
			assert.Equal(t, tt.all, all)
		})
	}
}
