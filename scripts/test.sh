#!/usr/bin/env bash
# Runs sensorstorm's checks and tests: gofmt, go vet, and go test -race over
# every package. MQTT tests start their own Mosquitto broker, so the
# mosquitto binary must be installed: as root this script installs the
# Debian package when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v mosquitto >/dev/null 2>&1 && [ ! -x /usr/sbin/mosquitto ]; then
	if [ "$(id -u)" = 0 ]; then
		echo "installing mosquitto (Debian package) for the MQTT tests"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mosquitto >/dev/null
	else
		echo "mosquitto is missing: install the Debian package 'mosquitto' (the MQTT tests need it)" >&2
		exit 1
	fi
fi

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:" >&2
	echo "$unformatted" >&2
	exit 1
fi
go vet ./...
go test -race -timeout 15m "$@" ./...
