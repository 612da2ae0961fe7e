// Package loadtest measures a session store on the disk it runs on, like
// pgbench or redis-benchmark: first the fsync rate F of a directory (4 KiB
// write + fsync in a loop), then a list of scenarios, each on a fresh
// store — a temporary SQLite database in that directory, or a temporary
// schema of a PostgreSQL database — that is removed afterwards. For each
// scenario it reports operations per second, the median and 99th
// percentile latency, and the ratio to F (how many durable operations one
// fsync carries).
//
// The scenarios (Scenarios) cover governed Use with one and with many
// callers, conversation appends at 10 and at 10,000 messages of history,
// get by id and a list page of governed sessions, and agent sessions
// (ADK's model): create, event append (one caller, and four callers on
// sessions of their own, which group commit puts in one fsync), the last
// 100 of 1,000 events, and a list page. A caller may run a subset
// (Select) or scenarios of its own.
//
// sessionctl bench is a thin shell over Run:
//
//	rep, err := loadtest.Run(ctx, loadtest.Options{Dir: "/var/lib/agent", Duration: 5 * time.Second})
package loadtest
