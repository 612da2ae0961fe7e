package pgstore_test

// The facet registry (internal/facet) against a freshly migrated
// PostgreSQL schema: every table belongs to exactly one facet or is
// migration bookkeeping, and every registered table exists. A table added
// by a migration without a registry entry fails here, so that no
// maintenance path (export, import, gc, stats, doctor) can forget it.
// Skips without a server outside CI, like the other pgstore tests.

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentstore/sessionstore/facet"
	"github.com/agentstore/sessionstore/migrations"
)

func TestRegistryCoversSchema(t *testing.T) {
	ctx := context.Background()
	loc := newSchema(t)
	st := open(t, loc)
	current, latest, err := st.SchemaVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if current != latest {
		t.Fatalf("fresh store at schema version %d, binary %d", current, latest)
	}
	rows, err := adminPool(t).Query(ctx, `SELECT tablename::text FROM pg_catalog.pg_tables
		WHERE schemaname = $1 ORDER BY tablename COLLATE "C"`, schemaOf(t, loc))
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(tables, migrations.TableName) {
		t.Errorf("no migration table %s among %v", migrations.TableName, tables)
	}
	for _, tb := range tables {
		owners := 0
		for _, f := range facet.All() {
			if slices.Contains(f.Tables, tb) {
				owners++
			}
		}
		if slices.Contains(facet.SchemaTables(), tb) || slices.Contains(facet.MaintenanceTables(), tb) {
			owners++
		}
		if slices.Contains(facet.IndexTables(), tb) {
			owners++
		}
		if slices.Contains(facet.KeyringTables(), tb) {
			owners++
		}
		if owners != 1 {
			t.Errorf("table %s belongs to %d facets (or schema entries), want exactly 1: register it in internal/facet", tb, owners)
		}
	}
	for _, f := range facet.All() {
		for _, tb := range f.TablesAt(latest) {
			if !slices.Contains(tables, tb) {
				t.Errorf("table %s of facet %s does not exist in a fresh store", tb, f.Name)
			}
		}
	}
	if want := facet.TablesAt(latest); !slices.Equal(tables, want) {
		t.Errorf("tables of a fresh store:\n%v\nregistry at version %d:\n%v", tables, latest, want)
	}
}
