package sqlstore_test

// The facet registry (internal/facet) against a freshly migrated SQLite
// database: every table belongs to exactly one facet or is migration
// bookkeeping, and every registered table exists. A table added by a
// migration without a registry entry fails here, so that no maintenance
// path (export, import, gc, stats, doctor) can forget it.

import (
	"context"
	"database/sql"
	"slices"
	"testing"

	"github.com/agentstore/sessionstore/facet"
	"github.com/agentstore/sessionstore/migrations"
	"github.com/agentstore/sessionstore/sqlstore"
)

func TestRegistryCoversSchema(t *testing.T) {
	ctx := context.Background()
	path := sqlstore.FreshDBPath(t, "registry.db")
	st, err := sqlstore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	current, latest, err := st.SchemaVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if current != latest {
		t.Fatalf("fresh store at schema version %d, binary %d", current, latest)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_schema
		WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	checkRegistry(t, tables, latest)
}

// checkRegistry compares the tables of a store at schema version latest
// with the registry.
func checkRegistry(t *testing.T, tables []string, latest int64) {
	t.Helper()
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
		if slices.Contains(facet.SQLiteIndexTables(), tb) {
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
	want := append(facet.TablesAt(latest), facet.SQLiteIndexTables()...)
	slices.Sort(want)
	if !slices.Equal(tables, want) {
		t.Errorf("tables of a fresh store:\n%v\nregistry at version %d:\n%v", tables, latest, want)
	}
}
