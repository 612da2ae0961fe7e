package main

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/pressly/goose/v3"

	"github.com/agentstore/sessionstore/cmd/sessionctl/jsonout"
	"github.com/agentstore/sessionstore/cmd/sessionctl/specs"
	"github.com/agentstore/sessionstore/cmd/sessionctl/tablefmt"
	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

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

func runMigrate(ctx context.Context, g *globals, args []string) error {
	sp := specs.Migrate(helpExits)
	fs := g.newFlags(sp)
	asJSON := fs.Bool("json", false, "print one JSON document")
	pos, err := g.parseArgs(fs, sp, args, 0, 1)
	if err != nil {
		return err
	}
	action := "status"
	if len(pos) == 1 {
		action = pos[0]
	}
	if err := g.checkActionFlags(fs, sp, action); err != nil {
		return err
	}
	switch action {
	case "status":
		return migrateStatus(ctx, g, *asJSON)
	case "up":
		return migrateUp(ctx, g, *asJSON)
	}
	return g.usageErr(sp.Name, "unknown action %q: want status or up", action)
}

func migrateStatus(ctx context.Context, g *globals, asJSON bool) error {
	var current, latest int64
	var status []*goose.MigrationStatus
	var err error
	if g.isPG() {
		current, latest, status, err = pgMigrationStatus(ctx, g)
	} else {
		current, latest, status, err = sqliteMigrationStatus(ctx, g)
	}
	if err != nil {
		return g.fail("migrate", err)
	}
	doc := migrateStatusJSON{DatabaseVersion: current, BinaryVersion: latest, Migrations: []migrationJSON{}}
	for _, s := range status {
		m := migrationJSON{Version: s.Source.Version, File: path.Base(s.Source.Path), State: "pending"}
		if s.State == goose.StateApplied {
			m.State = "applied"
			m.AppliedAt = jsonout.Time(s.AppliedAt)
		}
		doc.Migrations = append(doc.Migrations, m)
	}
	if asJSON {
		if err := jsonout.Write(g.stdout, doc); err != nil {
			return g.fail("migrate", err)
		}
		if current > latest {
			return exitStatus(exitSchemaTooNew)
		}
		return nil
	}
	w := g.stdout
	fmt.Fprintf(w, "database %s: schema version %d; this binary: %d\n", g.dbName(), current, latest)
	tw := tablefmt.NewWriter(w)
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
		fmt.Fprintf(g.stderr, "sessionctl migrate: %v\n", &store.SchemaTooNewError{DatabaseVersion: current, BinaryVersion: latest})
		return exitStatus(exitSchemaTooNew)
	case current < latest:
		fmt.Fprintf(w, "%d pending: run sessionctl migrate up\n", latest-current)
	}
	return nil
}

func migrateUp(ctx context.Context, g *globals, asJSON bool) error {
	var doc migrateUpJSON
	err := g.mustExist(ctx)
	var missing *errNoDatabase
	var none *errNoStore
	switch {
	case errors.As(err, &missing), errors.As(err, &none):
		doc.Created = true
	case err != nil:
		return g.fail("migrate", err)
	case g.isPG():
		p, err := g.pgProbe(ctx)
		if err != nil {
			return g.fail("migrate", err)
		}
		doc.FromVersion = p.Version
	default:
		doc.FromVersion, _, err = sqlstore.SchemaVersionAt(ctx, g.db)
		if err != nil {
			return g.fail("migrate", fmt.Errorf("%s: %w", g.db, err))
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
		return g.result("migrate", jsonout.Write(g.stdout, doc))
	}
	switch {
	case doc.Created:
		fmt.Fprintf(g.stdout, "created %s at schema version %d\n", g.dbName(), doc.ToVersion)
	case doc.FromVersion == doc.ToVersion:
		fmt.Fprintf(g.stdout, "%s is up to date at schema version %d\n", g.dbName(), doc.ToVersion)
	default:
		fmt.Fprintf(g.stdout, "migrated %s from schema version %d to %d\n", g.dbName(), doc.FromVersion, doc.ToVersion)
	}
	return nil
}

// sqliteMigrationStatus reads the migration state of the existing file
// without the store (which would refuse a newer schema).
func sqliteMigrationStatus(ctx context.Context, g *globals) (current, latest int64, status []*goose.MigrationStatus, err error) {
	if err := g.mustExistFile(); err != nil {
		return 0, 0, nil, err
	}
	return sqlstore.MigrationStatus(ctx, g.db)
}

// pgMigrationStatus reads the migration state of the store's PostgreSQL
// schema, which must hold a store.
func pgMigrationStatus(ctx context.Context, g *globals) (current, latest int64, status []*goose.MigrationStatus, err error) {
	info, err := g.pgProbe(ctx)
	if err != nil {
		return 0, 0, nil, err
	}
	if !info.HasStore {
		return 0, 0, nil, &errNoStore{db: g.dbName(), schema: info.Schema}
	}
	current, latest, status, err = pgstore.MigrationStatus(ctx, g.db)
	if err != nil {
		return 0, 0, nil, fmt.Errorf("%s: %w", g.dbName(), err)
	}
	return current, latest, status, nil
}
