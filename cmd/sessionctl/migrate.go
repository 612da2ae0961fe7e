package main

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/pressly/goose/v3"

	"github.com/agentstore/sessionstore/migrations"
	"github.com/agentstore/sessionstore/store"
)

var migrateSpec = spec{
	name: "migrate",
	args: "[status|up]",
	about: `"status" (the default) lists the schema migrations this binary knows and
whether each is applied to the database; it never changes the file. "up"
applies the pending ones under the writer lock, so that concurrent
processes never migrate twice, and creates the database when it does not
exist. A database migrated by a newer binary is refused.`,
	examples: []string{
		"sessionctl migrate status --json",
		"sessionctl --db /var/lib/agent/sessions.db migrate up",
	},
}

// migrationJSON is one migration in the JSON of migrate status.
type migrationJSON struct {
	Version   int64  `json:"version"`
	File      string `json:"file"`
	State     string `json:"state"`
	AppliedAt string `json:"applied_at,omitempty"`
}

// migrateStatusJSON is the JSON document of migrate status.
type migrateStatusJSON struct {
	DatabaseVersion int64           `json:"database_version"`
	BinaryVersion   int64           `json:"binary_version"`
	Migrations      []migrationJSON `json:"migrations"`
}

// migrateUpJSON is the JSON document of migrate up.
type migrateUpJSON struct {
	Created     bool  `json:"created"`
	FromVersion int64 `json:"from_version"`
	ToVersion   int64 `json:"to_version"`
}

func runMigrate(ctx context.Context, g *globals, args []string) int {
	sp := migrateSpec
	fs := g.newFlags(sp)
	asJSON := fs.Bool("json", false, "print one JSON document")
	pos, code, done := g.parse(fs, sp, args)
	if done {
		return code
	}
	if code, bad := g.wantArgs(sp, pos, 0, 1); bad {
		return code
	}
	action := "status"
	if len(pos) == 1 {
		action = pos[0]
	}
	switch action {
	case "status":
		return migrateStatus(ctx, g, *asJSON)
	case "up":
		return migrateUp(ctx, g, *asJSON)
	}
	return g.usageErr(sp.name, "unknown action %q: want status or up", action)
}

func migrateStatus(ctx context.Context, g *globals, asJSON bool) int {
	if err := g.mustExist(); err != nil {
		return g.fail("migrate", err)
	}
	latest, err := migrations.Latest()
	if err != nil {
		return g.fail("migrate", err)
	}
	db, err := openRaw(g.db, true)
	if err != nil {
		return g.fail("migrate", err)
	}
	defer db.Close()
	current, ok, err := rawSchemaVersion(ctx, db)
	if err != nil {
		return g.fail("migrate", fmt.Errorf("%s: %w", g.db, mapRawErr(err)))
	}
	if !ok {
		return g.fail("migrate", fmt.Errorf("%s: %w: no %s table", g.db, store.ErrNotSessionStore, migrations.TableName))
	}
	p, err := migrations.NewSQLiteProvider(db)
	if err != nil {
		return g.fail("migrate", err)
	}
	status, err := p.Status(ctx)
	if err != nil {
		return g.fail("migrate", err)
	}
	doc := migrateStatusJSON{DatabaseVersion: current, BinaryVersion: latest, Migrations: []migrationJSON{}}
	for _, s := range status {
		m := migrationJSON{Version: s.Source.Version, File: path.Base(s.Source.Path), State: "pending"}
		if s.State == goose.StateApplied {
			m.State = "applied"
			m.AppliedAt = jsonTime(s.AppliedAt)
		}
		doc.Migrations = append(doc.Migrations, m)
	}
	if asJSON {
		if err := writeJSON(g.stdout, doc); err != nil {
			return g.fail("migrate", err)
		}
		return exitOK
	}
	w := g.stdout
	fmt.Fprintf(w, "database %s: schema version %d; this binary: %d\n", g.db, current, latest)
	tw := newTable(w)
	fmt.Fprintln(tw, "VERSION\tFILE\tSTATE\tAPPLIED")
	for _, m := range doc.Migrations {
		applied := "-"
		if m.AppliedAt != "" {
			applied = m.AppliedAt
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", m.Version, m.File, m.State, applied)
	}
	tw.Flush()
	switch {
	case current > latest:
		fmt.Fprintf(w, "the database is newer than this binary: use a newer sessionctl\n")
	case current < latest:
		fmt.Fprintf(w, "%d pending: run sessionctl migrate up\n", latest-current)
	}
	return exitOK
}

func migrateUp(ctx context.Context, g *globals, asJSON bool) int {
	var doc migrateUpJSON
	err := g.mustExist()
	var missing *errNoDatabase
	switch {
	case errors.As(err, &missing):
		doc.Created = true
	case err != nil:
		return g.fail("migrate", err)
	default:
		db, err := openRaw(g.db, true)
		if err != nil {
			return g.fail("migrate", err)
		}
		doc.FromVersion, _, err = rawSchemaVersion(ctx, db)
		db.Close()
		if err != nil {
			return g.fail("migrate", fmt.Errorf("%s: %w", g.db, mapRawErr(err)))
		}
	}
	st, err := g.openOrCreate(ctx) // migrates under the writer lock
	if err != nil {
		return g.fail("migrate", err)
	}
	defer st.Close()
	doc.ToVersion, _, err = st.SchemaVersion(ctx)
	if err != nil {
		return g.fail("migrate", err)
	}
	if asJSON {
		if err := writeJSON(g.stdout, doc); err != nil {
			return g.fail("migrate", err)
		}
		return exitOK
	}
	switch {
	case doc.Created:
		fmt.Fprintf(g.stdout, "created %s at schema version %d\n", g.db, doc.ToVersion)
	case doc.FromVersion == doc.ToVersion:
		fmt.Fprintf(g.stdout, "%s is up to date at schema version %d\n", g.db, doc.ToVersion)
	default:
		fmt.Fprintf(g.stdout, "migrated %s from schema version %d to %d\n", g.db, doc.FromVersion, doc.ToVersion)
	}
	return exitOK
}
