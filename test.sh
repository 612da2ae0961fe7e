#!/usr/bin/env bash
# The project's test command: vet, a pure-Go build, and the whole test suite
# with the race detector (which itself needs cgo) and shuffled test order.
set -euo pipefail
cd "$(dirname "$0")"

# --- Timing -------------------------------------------------------------------
# Each block prints its time and the end prints the whole, with a warning
# line (not a failure: machines are noisy) past the budget of 15 minutes on
# a 2-core machine, so that a change sees its cost at once.
budget_seconds=900
test_start=$SECONDS
block_name="" block_start=0
block() { # block NAME: ends the running block (printing its time) and starts NAME
	if [ -n "$block_name" ]; then
		echo "test.sh: $block_name: $((SECONDS - block_start)) s"
	fi
	block_name="$1" block_start=$SECONDS
}
# ----------------------------------------------------------------------------

# --- The race detector and the transpiled SQLite ---------------------------
# modernc.org/sqlite is SQLite's C source translated to Go (modernc.org/sqlite/lib
# over modernc.org/libc). Instrumented by the race detector (and its pointer
# checks) it runs about twentyfold slower, and most of the race run's time was
# spent there. The detector looks for races in this module's code and in the
# database/sql driver, which stay instrumented; the translated C engine
# serializes its own memory with SQLite's mutexes and is built without the
# instrumentation (a package built without it is simply not watched, as the
# runtime's own code is not). Every package of this module, and the driver
# modernc.org/sqlite, is still compiled with -race.
race_flags=(-race -gcflags='modernc.org/libc/...=-race=false' -gcflags='modernc.org/sqlite/lib=-race=false' -gcflags='modernc.org/memory=-race=false')
# A program built with the detector sleeps 1 s when it exits (GORACE's
# atexit_sleep_ms, default 1000), in case another goroutine is about to
# race. The tests run their own test binary as a second process dozens of
# times per package (33 helper processes in SQLite's conformance suite, 54
# runs of sessionctl by the shells' completion scripts, ...), each a second
# of sleep: 55 s of TestCompletionScripts' 66 under the detector. A race found before the exit
# is still reported and still fails the process (exit status 66); only the
# grace period after the last test goes. A GORACE of your own still applies
# (its options come after).
export GORACE="atexit_sleep_ms=0${GORACE:+ $GORACE}"
# ----------------------------------------------------------------------------

block "gofmt, vet, pure-Go build"
test -z "$(gofmt -l .)" || { echo "gofmt needed on:"; gofmt -l .; exit 1; }
go vet ./...
CGO_ENABLED=0 go build ./...

# --- PostgreSQL -------------------------------------------------------------
# The pgstore tests run the same suite on a real PostgreSQL server.
# scripts/with-postgres.sh starts a private, throwaway one for the duration of
# the command (unix socket in a temp dir, stopped on exit; in CI it installs
# Debian's postgresql package when missing) and exports its URL, unless
# SESSIONSTORE_TEST_POSTGRES_URL is already set. Without a server outside CI
# the pgstore tests skip and say why; in CI (CI=true) they must run. The
# same holds for the guides' fragments that run on PostgreSQL
# (docs/snippets_test.go: maintenance.md's import into a pgstore).
with_postgres=(scripts/with-postgres.sh)
# ----------------------------------------------------------------------------

# This includes the web console (./console): its pages on both backends
# and its browser test, which needs a chromium binary (.ci/run installs
# Debian's; outside CI the browser test skips without one and says so).
#
# go test runs two packages' tests at a time (-p, the number of CPUs) and
# starts them in the order of its package list. In ./...'s alphabetical
# order the two longest, pgstore and sqlstore, came last: pgstore (382 of
# the race run's 619 s in a local run) started about 210 s in, after the
# others had run in turn, and the run ended with it. The longest packages
# are named first instead, so that the short ones fill in around them
# (replaying that run's package times on two slots: 594 s in alphabetical
# order, 571 s longest first); ./... after them adds every other package
# once.
race_first=(./pgstore ./sqlstore ./cmd/sessionctl ./docs ./console ./loadtest ./archive)
block "race run (SQLite and PostgreSQL)"
CGO_ENABLED=1 "${with_postgres[@]}" go test "${race_flags[@]}" -shuffle=on -timeout 45m "${race_first[@]}" ./...

# --- ADK for Go adapter: the separate module adk/ ------------------------
# It has its own go.mod so that the core library does not pull in ADK's
# dependencies; the root module's ./... therefore does not include it. This
# block runs ADK's own session-service suite (sessiontestsuite) against it
# on SQLite and on PostgreSQL (through the same private server script as
# above), its concurrency tests and its example.
block "adk module"
(
	cd adk
	test -z "$(gofmt -l .)" || { echo "gofmt needed on:"; gofmt -l .; exit 1; }
	go vet ./...
	CGO_ENABLED=0 go build ./...
	CGO_ENABLED=1 ../scripts/with-postgres.sh go test "${race_flags[@]}" -shuffle=on -timeout 45m ./...
)
# --- end of the ADK block ------------------------------------------------

# --- Reliability (issue 7) ---------------------------------------------------
# The heavy reliability tests ran a sample above (and do in a plain go test,
# where the full fault sweep alone took minutes). Here they run in full
# (SQLSTORE_RELIABILITY=full) without the race detector: every fault kind
# and mode of the fault-point sweeps, 50 crash trials
# (SQLSTORE_CRASH_TRIALS=1000 for more), the 4-process soak
# (SQLSTORE_SOAK=60s for longer), the concurrent-migration rounds and the
# creation of a store on a disk that fills up at each of its steps.
#
# The run is mostly one test at a time (TestFaultSweep alone is about 60 of
# its 100 s) and used 118 s of CPU in 98 s, 1.2 of the 2 cores, so it runs
# in the background beside the tests the race run leaves out and the
# volume tests, which take the other core and more (94 s of CPU in 51 s,
# 71 of them the PostgreSQL server's; and 63 s in 42 s). One after the
# other they took 173 + 35 s of the last quiet test.sh; their 280 s of CPU
# fit in about 140 s of two cores. The background run's output is printed
# when it ends, and a failure of any of them fails the script once all
# have ended.
block "reliability runs beside what the race run leaves out and the volume tests"
reliability_out=$(mktemp)
SQLSTORE_RELIABILITY=full go test -count=1 -shuffle=on -timeout 10m \
	-run '^(TestFaultSweep|TestCrashTrials|TestSoak|TestMigrateConcurrentProcesses|TestCreateOnFullDisk)' ./sqlstore >"$reliability_out" 2>&1 &
reliability_pid=$!
beside_status=0
{
	# What the race run leaves out (each test says so where it skips): the
	# encryption conformance tests on both backends, among them the suites
	# again on an encrypted store, and the long tests of sealed
	# conversations (issue 29), which have no concurrency of their own.
	"${with_postgres[@]}" go test -count=1 -shuffle=on -timeout 10m -run '^TestConformance$/^Encryption$' ./sqlstore ./pgstore &&
		"${with_postgres[@]}" go test -count=1 -shuffle=on -timeout 10m \
			-run '^(TestEncryptionSearchOptInImport|TestSealedConversationSessionData)$' ./sqlstore ./archive &&
		# --- Volume tests without the race detector ---------------------
		# sessionctl bench's tests run every standard load scenario, whose
		# seeding took minutes under the race detector; the race run above
		# skips them (package loadtest's own tests run the scenarios under
		# it) and they run here in full, on SQLite and on PostgreSQL.
		"${with_postgres[@]}" go test -count=1 -timeout 10m \
			-run '^(TestBenchJSON|TestBenchPostgres)$' ./cmd/sessionctl
} || beside_status=$?
reliability_status=0
wait "$reliability_pid" || reliability_status=$?
echo "reliability runs (SQLSTORE_RELIABILITY=full, in the background):"
cat "$reliability_out"
rm -f "$reliability_out"
if [ "$reliability_status" -ne 0 ] || [ "$beside_status" -ne 0 ]; then
	echo "FAIL: the reliability runs (status $reliability_status) or the tests beside them (status $beside_status)"
	exit 1
fi

# --- Fuzzing (issue 7) -------------------------------------------------------
# Each native fuzz target runs briefly on top of its seed corpus (the seeds
# already ran above as ordinary tests). FUZZTIME=2m ./test.sh fuzzes longer;
# FUZZTIME=0 skips this block. A failing input is saved under the package's
# testdata/fuzz/<target>/ and replays with plain `go test`. Minimizing is
# capped at 50 calls per input: the sqlstore targets are stateful (SQLite's
# pages change under them), keep finding "new coverage", and would otherwise
# spend the whole run minimizing instead of fuzzing.
#
# A duration -fuzztime races Go 1.26's fuzz coordinator: when the deadline
# fires while a worker is mid-call, the run fails with a bare "context deadline
# exceeded" and no failing input (go.dev/issue/75804, fixed in Go 1.27). Such a
# run is retried, at most twice; anything else (a failing input written, a
# panic, a test error) fails at once, and so do three deadline races in a row.
#
# Each package's fuzzing test binary is built once (go test -c -fuzz, the
# same coverage instrumentation as go test -fuzz) and run for each of its
# targets in the package's directory, as go test -fuzz runs it (which linked
# the binary again for every target: nine links, five of them repeats).
# The corpus cache is a new, empty directory each run, so every run fuzzes
# from the seeds for the whole FUZZTIME: with go test's cache in GOCACHE,
# which keeps every input found "interesting" and grows each run, the
# sqlstore targets (stateful, about 30 inputs a second) spent all of their
# 8 s replaying the first hundred of the 427 cached inputs of a developer's
# machine and fuzzed nothing; from the seeds, one runs about 3,000 new inputs.
block "fuzzing"
FUZZTIME="${FUZZTIME:-8s}"
fuzz_deadline_race() {
	grep -q '^    context deadline exceeded$' <<<"$1" &&
		! grep -q -e 'Failing input written' -e '^panic:' -e '_test\.go:[0-9]*:' <<<"$1"
}
if [ "$FUZZTIME" != "0" ]; then
	fuzz_bin_dir=$(mktemp -d)
	fuzz_cache="$fuzz_bin_dir/corpus"
	for target in store:FuzzCreateRequest store:FuzzUseRequest store:FuzzUnmarshalContentBlock store/a3s:FuzzDecode internal/rowcodec:FuzzDecodeContent \
		sqlstore:FuzzCreate sqlstore:FuzzUse sqlstore:FuzzAppendMessages sqlstore:FuzzImportA3S; do
		pkg="${target%%:*}" name="${target#*:}"
		bin="$fuzz_bin_dir/${pkg//\//_}.test"
		if [ ! -x "$bin" ]; then
			go test -c -fuzz "^${name}\$" -o "$bin" "./$pkg"
		fi
		for attempt in 1 2 3; do
			if out=$(cd "$pkg" && "$bin" -test.paniconexit0 -test.timeout 10m -test.run '^$' -test.fuzz "^${name}\$" \
				-test.fuzztime "$FUZZTIME" -test.fuzzminimizetime 50x -test.fuzzcachedir "$fuzz_cache/$pkg" 2>&1); then
				break
			fi
			if [ "$attempt" -lt 3 ] && fuzz_deadline_race "$out"; then
				echo "fuzz $name: stopped by the fuzz-time deadline race (go.dev/issue/75804), no failing input; again"
				continue
			fi
			echo "$out"
			echo "FAIL: fuzzing $name"
			exit 1
		done
		echo "fuzz $name: $(echo "$out" | grep -o 'elapsed: [^,]*, execs: [0-9]*' | tail -1)"
	done
	rm -rf "$fuzz_bin_dir"
fi
# -----------------------------------------------------------------------------
block ""
total=$((SECONDS - test_start))
echo "test.sh: all blocks: ${total} s ($((total / 60)) min $((total % 60)) s)"
if [ "$total" -gt "$budget_seconds" ]; then
	echo "test.sh: WARNING: the whole took ${total} s, over the budget of ${budget_seconds} s (15 minutes on a 2-core machine); look at the block times above"
fi
