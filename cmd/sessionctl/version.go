package main

import (
	"context"
	"database/sql"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/agentstore/sessionstore/migrations"
)

var versionSpec = spec{
	name: "version",
	about: `Prints the version of sessionctl (the module version and VCS revision it
was built from), the Go and SQLite versions, and the newest schema version
it can read and migrate to. It does not open the database.`,
	examples: []string{"sessionctl version", "sessionctl version --json"},
}

// versionJSON is the JSON document of version.
type versionJSON struct {
	Version       string `json:"version"`
	Revision      string `json:"revision,omitempty"`
	GoVersion     string `json:"go_version"`
	Platform      string `json:"platform"`
	SQLiteVersion string `json:"sqlite_version"`
	SchemaVersion int64  `json:"schema_version"`
}

func runVersion(ctx context.Context, g *globals, args []string) int {
	sp := versionSpec
	fs := g.newFlags(sp)
	asJSON := fs.Bool("json", false, "print one JSON document")
	pos, code, done := g.parse(fs, sp, args)
	if done {
		return code
	}
	if code, bad := g.wantArgs(sp, pos, 0, 0); bad {
		return code
	}
	doc := versionJSON{Version: "(devel)", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			doc.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				doc.Revision = s.Value
			}
		}
	}
	var err error
	if doc.SchemaVersion, err = migrations.Latest(); err != nil {
		return g.fail(sp.name, err)
	}
	if doc.SQLiteVersion, err = sqliteVersion(ctx); err != nil {
		return g.fail(sp.name, err)
	}
	if *asJSON {
		if err := writeJSON(g.stdout, doc); err != nil {
			return g.fail(sp.name, err)
		}
		return exitOK
	}
	rev := ""
	if doc.Revision != "" {
		rev = " (" + doc.Revision[:min(12, len(doc.Revision))] + ")"
	}
	fmt.Fprintf(g.stdout, "sessionctl %s%s %s %s\n", doc.Version, rev, doc.GoVersion, doc.Platform)
	fmt.Fprintf(g.stdout, "schema version %d, SQLite %s (modernc.org/sqlite, pure Go)\n", doc.SchemaVersion, doc.SQLiteVersion)
	return exitOK
}

// sqliteVersion asks the linked SQLite library for its version.
func sqliteVersion(ctx context.Context) (string, error) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		return "", err
	}
	defer db.Close()
	var v string
	err = db.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&v)
	return v, err
}
