#!/usr/bin/env bash
# The PostgreSQL benchmarks of commits, on a durable server (fsync,
# full_page_writes and synchronous_commit on: SESSIONSTORE_PG_DURABLE=1 of
# scripts/with-postgres.sh), in one command:
#
#   scripts/pg-bench.sh
#
# - BenchmarkGovernedConcurrency: governed Use throughput of one caller,
#   32 callers on one session, on 32 sessions of one agent and on 32
#   agents (goals ≥ 5×, ≥ 4×, ≥ 5× one caller), and 2 and 4 callers on
#   their own sessions (few/callers=2, few/callers=4); PG_BENCH_ROUNDS rounds
#   (default 5); PG_BENCH_SHAPE=one-agent (a prefix of a shape's name)
#   runs only that shape beside one caller. In the same rounds, right
#   after each of caller=1, shared, one-agent and agents, its floors
#   (pgstore/concurrency_floor_bench_test.go): floor:<shape>, the store's
#   own batch statements and arguments replayed with pgx alone at the
#   calls per transaction the shape reached (its ×1 bounds the shape's
#   ratio with these statements), and raw:<shape>, one UPDATE of the
#   session rows and one INSERT of the audit events per transaction (the
#   schema's least write; raw:caller=1 is one caller's commit bound);
#   each with calls/s, ×1 (÷ caller=1), ×own1 (÷ its own one caller) and
#   client and server CPU µs per call. PG_BENCH_FLOOR=0 leaves them out.
# - BenchmarkAgentEncryption and BenchmarkConversationEncryption: plaintext
#   against encrypted appends (goal: plaintext ≤ 1.3× encrypted);
#   PG_BENCH_APPENDS iterations (default 300).
#
# Run it on a quiet machine: the load average is printed before and after
# each benchmark. With SESSIONSTORE_TEST_POSTGRES_URL set, the benchmarks
# run on that server instead, durable or not as it is configured.
set -euo pipefail
cd "$(dirname "$0")/.."
export SESSIONSTORE_PG_DURABLE=1
export PG_BENCH_ROUNDS="${PG_BENCH_ROUNDS:-5}" PG_BENCH_APPENDS="${PG_BENCH_APPENDS:-300}"
exec scripts/with-postgres.sh bash -c '
set -e
echo "load average: $(cut -d" " -f1-3 /proc/loadavg)"
go test ./pgstore -run "^$" -bench "^BenchmarkGovernedConcurrency$" -benchtime "${PG_BENCH_ROUNDS}x" -timeout 60m
echo "load average: $(cut -d" " -f1-3 /proc/loadavg)"
go test ./pgstore -run "^$" -bench "^Benchmark(Agent|Conversation)Encryption$" -benchtime "${PG_BENCH_APPENDS}x" -timeout 60m
echo "load average: $(cut -d" " -f1-3 /proc/loadavg)"
'
