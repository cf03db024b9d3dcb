module github.com/sensorstorm/sensorstorm

go 1.26.8

require (
	github.com/cenkalti/backoff/v5 v5.0.3
	github.com/google/btree v1.1.3
	github.com/influxdata/line-protocol/v2 v2.2.1
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
	pgregory.net/rapid v1.3.0
)

require (
	github.com/google/go-cmp v0.7.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
)
