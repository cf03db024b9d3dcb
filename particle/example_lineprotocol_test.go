package particle_test

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sensorstorm/sensorstorm/particle"
)

func ExampleDecoder() {
	input := `# Intel Berkeley Lab, timestamps in milliseconds
env,room=lib1,node=12 temperature=22.08,humidity=51.53,par=20i 1077926400123
env,node=13,room=lib1 temperature=22.1,humidity=hot 1077926400481
env,node=14,room=lab2 temperature=21.9,status="ok" 1077926401015
`
	d, err := particle.NewDecoder(strings.NewReader(input), "lab.lp", particle.DecoderConfig{
		Precision: particle.Millisecond,
		Origin:    1,
	})
	if err != nil {
		panic(err)
	}
	for {
		var p particle.Particle
		err := d.Decode(&p)
		if err == io.EOF {
			break
		}
		var bad *particle.DecodeError
		if errors.As(err, &bad) {
			fmt.Println("skipped:", bad)
			continue
		}
		if err != nil {
			panic(err) // a read error ends the input
		}
		fmt.Println(p.Seq, p.EventTime().Format("15:04:05.000"), p.Measurement, p.Tags, p.Fields)
	}
	// Output:
	// 1 00:00:00.123 env [{node 12} {room lib1}] [{temperature 22.08} {humidity 51.53} {par 20i}]
	// skipped: particle: decode lab.lp:3:49: field value has unrecognized type
	// 2 00:00:01.015 env [{node 14} {room lab2}] [{temperature 21.9} {status "ok"}]
}

func ExampleEncoder() {
	var e particle.Encoder
	e.SetPrecision(particle.Second)
	readings := []particle.Particle{
		{
			Time: 1077926400e9, Measurement: "env",
			Tags:   []particle.Tag{{Key: "room", Value: "lib 1"}, {Key: "node", Value: "12"}},
			Fields: []particle.Field{{Key: "temperature", Value: particle.Float(22.08)}, {Key: "note", Value: particle.String(`say "hi"`)}},
		},
		{Time: 1077926401e9, Measurement: "env"}, // no fields: skipped
		{Time: 1077926402e9, Measurement: "env,avg", Fields: []particle.Field{{Key: "n", Value: particle.Uint(3)}}},
	}
	for i := range readings {
		if err := e.Encode(&readings[i]); err != nil {
			fmt.Println("error:", err)
		}
	}
	fmt.Print(string(e.Bytes()))
	// Output:
	// error: particle: no fields
	// env,node=12,room=lib\ 1 temperature=22.08,note="say \"hi\"" 1077926400
	// env\,avg n=3u 1077926402
}
