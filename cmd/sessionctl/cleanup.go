package main

import (
	"context"
	"fmt"
	"io"
)

var cleanupSpec = spec{
	name: "cleanup",
	about: `Deletes governed sessions that are closed or past their time limit, then
checkpoints the WAL into the database file and truncates it. With --vacuum
the database file is also rewritten without its free pages, so that it
shrinks on disk (this holds the write lock while it runs). Before it
changes anything, cleanup checks the database (SQLite's quick_check, and
that every stored document decodes, as doctor does) and refuses to
rewrite a damaged one. On PostgreSQL
only the sessions are deleted: the server manages its WAL and reclaims
space with autovacuum, and --vacuum is refused.`,
	examples: []string{
		"sessionctl cleanup",
		"sessionctl cleanup --vacuum --json",
	},
}

// cleanupJSON is the JSON document of cleanup.
type cleanupJSON struct {
	Removed    int64 `json:"removed"`
	*WALResult       // SQLite only
}

func runCleanup(ctx context.Context, g *globals, args []string) int {
	sp := cleanupSpec
	fs := g.newFlags(sp)
	vacuum := fs.Bool("vacuum", false, "also rewrite the database file without free pages")
	asJSON := fs.Bool("json", false, "print one JSON document")
	pos, code, done := g.parse(fs, sp, args)
	if done {
		return code
	}
	if code, bad := g.wantArgs(sp, pos, 0, 0); bad {
		return code
	}
	if *vacuum && g.isPG() {
		return g.fail(sp.name, errNotOnPostgres("--vacuum", "autovacuum reclaims space (or run VACUUM yourself)"))
	}
	st, err := g.openExisting(ctx)
	if err != nil {
		return g.fail(sp.name, err)
	}
	if err := g.checkBeforeRewrite(ctx); err != nil {
		st.Close()
		return g.fail(sp.name, err)
	}
	n, err := st.Governance().Cleanup(ctx)
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return g.fail(sp.name, err)
	}
	doc := cleanupJSON{Removed: n}
	if !g.isPG() {
		wal, err := checkpoint(ctx, g.db, *vacuum)
		if err != nil {
			return g.fail(sp.name, err)
		}
		doc.WALResult = &wal
	}
	if *asJSON {
		if err := writeJSON(g.stdout, doc); err != nil {
			return g.fail(sp.name, err)
		}
		return exitOK
	}
	fmt.Fprintf(g.stdout, "removed %d closed or expired governed %s\n", n, plural(int(n), "session", "sessions"))
	if doc.WALResult != nil {
		printWAL(g.stdout, *doc.WALResult)
	}
	return exitOK
}

// printWAL reports a checkpoint (and vacuum) in one or two lines.
func printWAL(w io.Writer, r WALResult) {
	state := "truncated"
	if !r.Complete {
		state = "partly checkpointed (readers were active)"
	}
	fmt.Fprintf(w, "wal: %s -> %s, %s\n", humanBytes(r.WALBytesBefore), humanBytes(r.WALBytesAfter), state)
	if r.Vacuumed {
		fmt.Fprintf(w, "vacuum: database file %s smaller\n", humanBytes(r.VacuumedBytes))
	}
}
