package facet

import (
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/agentstore/sessionstore/migrations"
)

func TestRegistryIsWellFormed(t *testing.T) {
	latest, err := migrations.Latest()
	if err != nil {
		t.Fatal(err)
	}
	names := map[Name]bool{}
	tables := map[string]Name{}
	for _, f := range All() {
		if f.Name == "" || f.Title == "" || f.About == "" || len(f.Tables) == 0 {
			t.Errorf("facet %+v: name, title, about and tables must be set", f)
		}
		if names[f.Name] {
			t.Errorf("facet %s is registered twice", f.Name)
		}
		names[f.Name] = true
		if f.Since < 1 || f.Since > latest {
			t.Errorf("facet %s: since %d is not a schema version (1 to %d)", f.Name, f.Since, latest)
		}
		for _, tb := range f.Tables {
			if other, ok := tables[tb]; ok {
				t.Errorf("table %s belongs to %s and %s", tb, other, f.Name)
			}
			tables[tb] = f.Name
			if slices.Contains(SchemaTables(), tb) {
				t.Errorf("table %s of %s is a schema table", tb, f.Name)
			}
		}
		if g, ok := Lookup(f.Name); !ok || g.Name != f.Name {
			t.Errorf("Lookup(%s) = %+v, %v", f.Name, g, ok)
		}
	}
	for tb, name := range tables {
		if f, ok := Owner(tb); !ok || f.Name != name {
			t.Errorf("Owner(%s) = %s, %v; want %s", tb, f.Name, ok, name)
		}
	}
	if _, ok := Owner(migrations.TableName); ok {
		t.Errorf("the migration table has an owner")
	}
	droppedTables := 0
	for _, f := range All() {
		for tb, v := range f.Dropped {
			if !slices.Contains(f.Tables, tb) || v > latest {
				t.Errorf("facet %s: dropped table %s (at %d) is not one of its tables of a known version", f.Name, tb, v)
			}
			droppedTables++
		}
	}
	if got := TablesAt(latest); len(got) != len(tables)-droppedTables+len(SchemaTables())+len(MaintenanceTables())+len(IndexTables())+len(KeyringTables()) {
		t.Errorf("TablesAt(%d) = %v", latest, got)
	}
	if got := TablesAt(0); !slices.Equal(got, SchemaTables()) {
		t.Errorf("TablesAt(0) = %v, want the schema tables only", got)
	}
	for _, f := range All() {
		for tb, v := range f.Added {
			if !slices.Contains(f.Tables, tb) || v <= f.Since || v > latest {
				t.Errorf("facet %s: table %s added at %d: not one of its tables, or not a version after %d", f.Name, tb, v, f.Since)
			}
		}
	}
}

// A table added to a facet later is not among the tables of an older
// schema.
func TestTablesAtKnowsAddedTables(t *testing.T) {
	gov, _ := Lookup(Governance)
	if got := gov.TablesAt(8); slices.Contains(got, "spend_limits") || !slices.Contains(got, "governed_sessions") {
		t.Fatalf("governance tables at 8 = %v", got)
	}
	if got := gov.TablesAt(9); !slices.Contains(got, "spend_limits") || !slices.Contains(got, "spend_reservations") {
		t.Fatalf("governance tables at 9 = %v", got)
	}
	if got := TablesAt(8); slices.Contains(got, "audit_events") || slices.Contains(got, "spend_reservations") {
		t.Fatalf("TablesAt(8) = %v", got)
	}
}

func TestAllReturnsACopy(t *testing.T) {
	a := All()
	a[0].Tables[0] = "changed"
	a[0].Name = "changed"
	if b := All(); b[0].Tables[0] == "changed" || b[0].Name == "changed" {
		t.Fatal("All shares its slices with the registry")
	}
}

var createTableRE = regexp.MustCompile(`(?im)^\s*CREATE TABLE\s+(?:IF NOT EXISTS\s+)?"?([a-z_0-9]+)"?`)

// createdIn reports whether the migration text makes table tb, by
// CREATE TABLE or by renaming another to it: a table it drops and makes
// again (a rebuild with a new key) or a scratch table is not a facet's
// table going away.
func createdIn(text, tb string) bool {
	for _, m := range createTableRE.FindAllStringSubmatch(text, -1) {
		if m[1] == tb {
			return true
		}
	}
	return regexp.MustCompile(`(?i)RENAME TO\s+"?` + tb + `"?\b`).MatchString(text)
}

// dropTableRE finds the tables a migration drops.
var dropTableRE = regexp.MustCompile(`(?im)^\s*DROP TABLE\s+(?:IF EXISTS\s+)?"?([a-z_0-9]+)"?`)

// Without a database: every table a migration of either dialect creates
// belongs to exactly one facet, the facet whose Since is that migration's
// version, and every registered table is created by some migration. (The
// registry tests of sqlstore and pgstore check the same on migrated
// databases.)
func TestMigrationsCreateTheRegisteredTables(t *testing.T) {
	for _, dialect := range []struct {
		name  string
		files fs.FS
	}{{"sqlite", migrations.SQLite()}, {"postgres", migrations.Postgres()}} {
		names, err := fs.Glob(dialect.files, "*.sql")
		if err != nil || len(names) == 0 {
			t.Fatalf("%s migrations: %v %v", dialect.name, names, err)
		}
		created := map[string]bool{}
		dropped := map[string]int64{}
		for _, name := range names {
			version, err := goose.NumericComponent(name)
			if err != nil {
				t.Fatal(err)
			}
			b, err := fs.ReadFile(dialect.files, name)
			if err != nil {
				t.Fatal(err)
			}
			up, _, _ := strings.Cut(string(b), "-- +goose Down")
			for _, m := range dropTableRE.FindAllStringSubmatch(up, -1) {
				if f, ok := Owner(m[1]); ok && !createdIn(up, m[1]) {
					dropped[m[1]] = version
					if f.Dropped[m[1]] != version {
						t.Errorf("%s %s drops table %s of facet %s, dropped (Dropped) at %d", dialect.name, name, m[1], f.Name, f.Dropped[m[1]])
					}
				}
			}
			for _, m := range createTableRE.FindAllStringSubmatch(string(b), -1) {
				tb := m[1]
				// A table rebuilt by a later migration keeps its facet; a
				// scratch table of a rebuild is renamed or dropped by the
				// migration that makes it.
				if created[tb] || scratchTable(string(b), tb) {
					continue
				}
				created[tb] = true
				f, ok := Owner(tb)
				switch {
				case !ok && slices.Contains(MaintenanceTables(), tb):
					if want := max(MaintenanceSince, MaintenanceAdded[tb]); version != want {
						t.Errorf("%s %s creates maintenance table %s, not at version %d", dialect.name, name, tb, want)
					}
				case slices.Contains(IndexTables(), tb):
					since := IndexSince
					if tb != "search_docs" {
						since = IndexQueueSince
					}
					if version != since {
						t.Errorf("%s %s creates index table %s; it is of version %d", dialect.name, name, tb, since)
					}
				case slices.Contains(KeyringTables(), tb):
					if version != KeyringSince {
						t.Errorf("%s %s creates keyring table %s; KeyringSince is %d", dialect.name, name, tb, KeyringSince)
					}
				case !ok:
					t.Errorf("%s %s creates table %s, which belongs to no facet: register it in internal/facet", dialect.name, name, tb)
				case f.Added[tb] != 0 && f.Added[tb] != version:
					t.Errorf("%s %s creates table %s of facet %s, added (Added) at %d", dialect.name, name, tb, f.Name, f.Added[tb])
				case f.Added[tb] == 0 && f.Since != version:
					t.Errorf("%s %s creates table %s of facet %s, whose Since is %d", dialect.name, name, tb, f.Name, f.Since)
				}
			}
		}
		for _, f := range All() {
			for _, tb := range f.Tables {
				if !created[tb] {
					t.Errorf("%s: no migration creates table %s of facet %s", dialect.name, tb, f.Name)
				}
			}
			for tb, v := range f.Dropped {
				if dropped[tb] != v {
					t.Errorf("%s: facet %s has table %s dropped at %d; no migration of that version drops it", dialect.name, f.Name, tb, v)
				}
			}
		}
	}
}

// scratchTable reports whether the migration's Up renames or drops the
// table tb it creates (the copy of a table rebuilt with a new key).
func scratchTable(text, tb string) bool {
	text, _, _ = strings.Cut(text, "-- +goose Down")
	return regexp.MustCompile(`(?i)(ALTER TABLE\s+` + tb + `\s+RENAME TO|DROP TABLE\s+` + tb + `\b)`).MatchString(text)
}
