#!/usr/bin/env bash
# Runs a command with a private, throwaway PostgreSQL server and its URL in
# SESSIONSTORE_TEST_POSTGRES_URL, for the pgstore tests and benchmarks:
#
#   scripts/with-postgres.sh go test ./pgstore
#
# - If SESSIONSTORE_TEST_POSTGRES_URL is already set, the command runs
#   against that server and nothing is started.
# - Otherwise the server binaries of Debian's postgresql package are used
#   (under /usr/lib/postgresql/<version>/bin). In CI (CI=true) they are
#   installed with apt-get when missing; elsewhere a missing server only
#   prints a notice and the command runs without a URL (the pgstore tests
#   then skip, saying why).
# - The server lives in a temporary directory: initdb as the postgres user
#   when run as root, listening on a unix socket in that directory only (no
#   TCP port), one database "sessionstore_test". It is stopped and the
#   directory removed when the command ends, whatever its outcome.
# - SESSIONSTORE_PG_DURABLE=1 starts the server durable, as a production
#   server runs (fsync, full_page_writes and synchronous_commit on), for
#   benchmarks of commits (scripts/pg-bench.sh sets it). Without it the
#   server flushes nothing to disk (see below), which is right for tests
#   and wrong for any figure of commits per second.
# - SESSIONSTORE_PG_OPTS adds server options (postgres -c name=value ...),
#   for looking at what a test run costs the server, e.g.
#   SESSIONSTORE_PG_OPTS="-c log_min_duration_statement=100" or
#   "-c shared_preload_libraries=pg_stat_statements"; and
#   SESSIONSTORE_PG_LOG=file keeps a copy of the server's log when the
#   command ends.
set -euo pipefail

if [ "$#" -eq 0 ]; then
	echo "usage: $0 command [args...]" >&2
	exit 2
fi

if [ -n "${SESSIONSTORE_TEST_POSTGRES_URL:-}" ]; then
	exec "$@"
fi

find_bindir() {
	local d
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
		if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && [ -x "$d/postgres" ]; then
			echo "$d"
			return 0
		fi
	done
	if command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
		dirname "$(command -v initdb)"
		return 0
	fi
	return 1
}

bindir="$(find_bindir || true)"
if [ -z "$bindir" ] && [ "${CI:-}" = "true" ]; then
	echo "with-postgres: installing Debian's postgresql package" >&2
	if [ "$(id -u)" -ne 0 ]; then
		echo "with-postgres: need root to install postgresql" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq </dev/null
	apt-get install -y -qq --no-install-recommends postgresql </dev/null >/dev/null
	bindir="$(find_bindir || true)"
fi
if [ -z "$bindir" ]; then
	if [ "${CI:-}" = "true" ]; then
		echo "with-postgres: no PostgreSQL server binaries after install" >&2
		exit 1
	fi
	echo "with-postgres: no PostgreSQL server found (install Debian's postgresql package," >&2
	echo "  or set SESSIONSTORE_TEST_POSTGRES_URL); the pgstore tests will skip" >&2
	exec "$@"
fi

tmp="$(mktemp -d "${TMPDIR:-/tmp}/sessionstore-pg.XXXXXX")"
as_owner=()
if [ "$(id -u)" -eq 0 ]; then
	# initdb and postgres refuse to run as root.
	chown postgres "$tmp"
	as_owner=(runuser -u postgres --)
fi

cleanup() {
	"${as_owner[@]}" "$bindir/pg_ctl" -D "$tmp/data" -m fast -w stop >/dev/null 2>&1 || true
	if [ -n "${SESSIONSTORE_PG_LOG:-}" ]; then
		cp "$tmp/server.log" "$SESSIONSTORE_PG_LOG" || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"${as_owner[@]}" "$bindir/initdb" -D "$tmp/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >"$tmp/initdb.log" 2>&1 || {
	cat "$tmp/initdb.log" >&2
	exit 1
}
# Unix socket in the private directory only; enough connections for the
# parallel tests and their helper processes.
#
# The server is thrown away when the command ends and no test stops or
# kills it (the kill tests kill client processes, whose committed work the
# running server keeps whatever its settings), so it does not flush to
# disk: fsync=off, full_page_writes=off and synchronous_commit=off only
# matter if the server or the machine crashes, which would end the test
# run anyway. A commit then waits for no disk flush, which is most of the
# time of the row-by-row imports on a busy CI disk. Tests that ask for a
# durability level still set synchronous_commit per connection.
durability="-c fsync=off -c full_page_writes=off -c synchronous_commit=off"
if [ "${SESSIONSTORE_PG_DURABLE:-}" = "1" ]; then
	durability="-c fsync=on -c full_page_writes=on -c synchronous_commit=on"
fi
"${as_owner[@]}" "$bindir/pg_ctl" -D "$tmp/data" -l "$tmp/server.log" -w -t 60 \
	-o "-c listen_addresses='' -c unix_socket_directories='$tmp' -c max_connections=300 $durability ${SESSIONSTORE_PG_OPTS:-}" start >/dev/null || {
	cat "$tmp/server.log" >&2
	exit 1
}
# The test database sorts text by a natural-language (ICU) collation, as
# production databases often do, so that the tests of byte-order listing
# mean something; servers without ICU get the plain C.UTF-8 locale.
psql_admin=("${as_owner[@]}" "$bindir/psql" -h "$tmp" -U postgres -d postgres -q -v ON_ERROR_STOP=1)
"${psql_admin[@]}" -c "CREATE DATABASE sessionstore_test ENCODING 'UTF8' TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'" >/dev/null 2>&1 ||
	"${psql_admin[@]}" -c "CREATE DATABASE sessionstore_test ENCODING 'UTF8' TEMPLATE template0" >/dev/null

export SESSIONSTORE_TEST_POSTGRES_URL="postgres://postgres@/sessionstore_test?host=$tmp&sslmode=disable"
mode="fsync off: for tests"
if [ "${SESSIONSTORE_PG_DURABLE:-}" = "1" ]; then
	mode="durable: fsync on"
fi
echo "with-postgres: PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on $tmp ($mode; stopped on exit)" >&2
set +e
"$@"
status=$?
set -e
exit "$status"
