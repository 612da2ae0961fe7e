#!/usr/bin/env bash
# The project's test command: vet, a pure-Go build, and the whole test suite
# with the race detector (which itself needs cgo) and shuffled test order.
set -euo pipefail
cd "$(dirname "$0")"

test -z "$(gofmt -l .)" || { echo "gofmt needed on:"; gofmt -l .; exit 1; }
go vet ./...
CGO_ENABLED=0 go build ./...
CGO_ENABLED=1 go test -race -shuffle=on -timeout 15m ./...
