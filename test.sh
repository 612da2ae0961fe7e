#!/usr/bin/env bash
# The project's test command: vet, a pure-Go build, and the whole test suite
# with the race detector (which itself needs cgo) and shuffled test order.
set -euo pipefail
cd "$(dirname "$0")"

test -z "$(gofmt -l .)" || { echo "gofmt needed on:"; gofmt -l .; exit 1; }
go vet ./...
CGO_ENABLED=0 go build ./...

# --- PostgreSQL -------------------------------------------------------------
# The pgstore tests run the same suite on a real PostgreSQL server.
# scripts/with-postgres.sh starts a private, throwaway one for the duration of
# the command (unix socket in a temp dir, stopped on exit; in CI it installs
# Debian's postgresql package when missing) and exports its URL, unless
# SESSIONSTORE_TEST_POSTGRES_URL is already set. Without a server outside CI
# the pgstore tests skip and say why; in CI (CI=true) they must run.
with_postgres=(scripts/with-postgres.sh)
# ----------------------------------------------------------------------------

CGO_ENABLED=1 "${with_postgres[@]}" go test -race -shuffle=on -timeout 15m ./...

# --- ADK for Go adapter: the separate module adk/ ------------------------
# It has its own go.mod so that the core library does not pull in ADK's
# dependencies; the root module's ./... therefore does not include it. This
# block runs ADK's own session-service suite (sessiontestsuite) against it
# on SQLite and on PostgreSQL (through the same private server script as
# above), its concurrency tests and its example.
(
	cd adk
	test -z "$(gofmt -l .)" || { echo "gofmt needed on:"; gofmt -l .; exit 1; }
	go vet ./...
	CGO_ENABLED=0 go build ./...
	CGO_ENABLED=1 ../scripts/with-postgres.sh go test -race -shuffle=on -timeout 15m ./...
)
# --- end of the ADK block ------------------------------------------------
