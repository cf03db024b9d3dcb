package file_test

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sensorstorm/sensorstorm/connectors/file"
	"github.com/sensorstorm/sensorstorm/particle"
)

// A semicolon-separated recording with decimal commas, a missing-value
// sentinel and one malformed line, read with a column mapping.
func ExampleNewReader() {
	input := "Date;Time;CO;T\n" +
		"10/03/2004;18.00.00;2,6;13,6\n" +
		"10/03/2004;19.00.00;-200;13,3\n" +
		"10/03/2004;20.00.00;2,2;warm\n" +
		";;;\n"
	f := file.Format{Syntax: file.Delimited, Delimited: file.DelimitedConfig{
		Separator:    ";",
		Header:       true,
		Measurement:  "air",
		Time:         file.TimeConfig{Columns: []file.Column{{Name: "Date"}, {Name: "Time"}}, Layout: "02/01/2006 15.04.05"},
		Fields:       []file.Column{{Name: "CO", Key: "co", Type: file.ValueFloat}, {Name: "T", Key: "t", Type: file.ValueFloat}},
		DecimalComma: true,
		Missing:      []string{"-200"},
	}}
	r, err := file.NewReader(strings.NewReader(input), "air.csv", f)
	if err != nil {
		fmt.Println(err)
		return
	}
	for {
		var p particle.Particle
		err := r.Read(&p)
		if err == io.EOF {
			break
		}
		var de *particle.DecodeError
		if errors.As(err, &de) {
			fmt.Println(err)
			continue
		}
		line, _ := particle.AppendLineProtocol(nil, &p, particle.Second)
		fmt.Print(string(line))
	}
	// Output:
	// air co=2.6,t=13.6 1078941600
	// air t=13.3 1078945200
	// particle: decode air.csv:4:25: file: bad value: t "warm": strconv.ParseFloat: parsing "warm": invalid syntax
}
