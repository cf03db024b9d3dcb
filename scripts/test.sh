#!/usr/bin/env bash
# Runs sensorstorm's checks and tests: go vet of every package, tests included, for
# darwin and windows (amd64, arm64), then gofmt, go vet, and go test -race
# over every package. MQTT tests start their own Mosquitto broker, so the
# mosquitto binary must be installed: as root this script installs the
# Debian package when it is missing. PostgreSQL tests need a server at
# 127.0.0.1:5432 that trusts the user postgres (or SENSORSTORM_POSTGRES_URL):
# as root this script starts the local cluster when it is stopped, and
# installs the Debian package, trusting loopback connections, when it is
# missing. The status page's browser test drives Chromium (/usr/bin/chromium):
# as root this script installs the Debian packages chromium and
# chromium-driver when they are missing. The InfluxDB sink's tests start
# their own InfluxDB 1.x and VictoriaMetrics servers: as root this script
# installs the Debian packages influxdb and victoria-metrics when they are
# missing. The cluster's tests in network namespaces run NATS nodes and
# workers each in a namespace of its own: they need root and the ip command,
# and as root this script installs the Debian package iproute2 when it is
# missing.
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

if ! command -v ip >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ]; then
		echo "installing iproute2 (Debian package) for the tests in network namespaces"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iproute2 >/dev/null
	else
		echo "ip is missing: install the Debian package 'iproute2' (the tests in network namespaces need it)" >&2
		exit 1
	fi
fi

if [ ! -x /usr/bin/chromium ] || ! command -v chromedriver >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ]; then
		echo "installing chromium and chromium-driver (Debian packages) for the status page's browser test"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
	else
		echo "chromium is missing: install the Debian packages 'chromium' and 'chromium-driver' (the status page's browser test needs them)" >&2
		exit 1
	fi
fi

if ! command -v influxd >/dev/null 2>&1 || ! command -v victoria-metrics >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ]; then
		echo "installing influxdb and victoria-metrics (Debian packages) for the InfluxDB sink's tests"
		apt-get update -qq
		# The tests start their own servers on free ports, not the packages' services.
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq influxdb victoria-metrics >/dev/null
	else
		echo "influxd or victoria-metrics is missing: install the Debian packages 'influxdb' and 'victoria-metrics' (the InfluxDB sink's tests need them)" >&2
		exit 1
	fi
fi

if [ -z "${SENSORSTORM_POSTGRES_URL:-}" ] && ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
	if [ "$(id -u)" != 0 ]; then
		echo "PostgreSQL is not running at 127.0.0.1:5432: start it, or install the Debian package 'postgresql' (the PostgreSQL tests need it)" >&2
		exit 1
	fi
	if ! command -v pg_ctlcluster >/dev/null 2>&1; then
		echo "installing postgresql (Debian package) for the PostgreSQL tests"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
		version=$(ls /etc/postgresql | sort -V | tail -n 1)
		# A test server: trust the local and loopback connections.
		printf 'local all all trust\nhost all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\n' >"/etc/postgresql/$version/main/pg_hba.conf"
		pg_ctlcluster --skip-systemctl-redirect "$version" main reload 2>/dev/null || true
	fi
	version=$(ls /etc/postgresql | sort -V | tail -n 1)
	echo "starting PostgreSQL $version for the PostgreSQL tests"
	pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
	for _ in $(seq 50); do
		pg_isready -q -h 127.0.0.1 -p 5432 && break
		sleep 0.2
	done
	pg_isready -q -h 127.0.0.1 -p 5432 || { echo "PostgreSQL did not start" >&2; exit 1; }
fi

# Every package, tests included, compiles and passes vet for the other
# platforms the spool and the connectors run on: macOS and Windows, on
# Intel and ARM (vet type-checks what a build would compile, and more).
for target in darwin/amd64 darwin/arm64 windows/amd64 windows/arm64; do
	echo "checking the build for $target"
	GOOS=${target%/*} GOARCH=${target#*/} go vet ./...
done

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:" >&2
	echo "$unformatted" >&2
	exit 1
fi
go vet ./...
# A package may take 11 minutes with both cores busy (cluster: its kill
# and partition tests run worker processes and NATS servers).
go test -race -timeout 20m "$@" ./...
