package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/agentstore/sessionstore/cmd/sessionctl/jsonout"
	"github.com/agentstore/sessionstore/cmd/sessionctl/specs"
	"github.com/agentstore/sessionstore/migrations"
	"github.com/agentstore/sessionstore/sqlstore"
)

// versionJSON is the JSON document of version.
type versionJSON struct {
	Version       string `json:"version"`
	Revision      string `json:"revision,omitempty"`
	Modified      bool   `json:"modified,omitempty"`
	GoVersion     string `json:"go_version"`
	Platform      string `json:"platform"`
	SQLiteVersion string `json:"sqlite_version"`
	SchemaVersion int64  `json:"schema_version"`
}

func runVersion(ctx context.Context, g *globals, args []string) error {
	sp := specs.Version
	fs := g.newFlags(sp)
	asJSON := fs.Bool("json", false, "print one JSON document")
	_, err := g.parseArgs(fs, sp, args, 0, 0)
	if err != nil {
		return err
	}
	readBI := g.buildInfo
	if readBI == nil {
		readBI = debug.ReadBuildInfo
	}
	doc := buildVersion(readBI())
	if doc.SchemaVersion, err = migrations.Latest(); err != nil {
		return g.fail(sp.Name, err)
	}
	if doc.SQLiteVersion, err = sqlstore.SQLiteVersion(ctx); err != nil {
		return g.fail(sp.Name, err)
	}
	if *asJSON {
		return g.result(sp.Name, jsonout.Write(g.stdout, doc))
	}
	rev := ""
	if doc.Revision != "" {
		rev = " (" + doc.Revision[:min(12, len(doc.Revision))]
		if doc.Modified {
			rev += ", modified"
		}
		rev += ")"
	}
	fmt.Fprintf(g.stdout, "sessionctl %s%s %s %s\n", doc.Version, rev, doc.GoVersion, doc.Platform)
	fmt.Fprintf(g.stdout, "schema version %d, SQLite %s (modernc.org/sqlite, pure Go)\n", doc.SchemaVersion, doc.SQLiteVersion)
	return nil
}

// buildRevision is the VCS revision given at link time (-ldflags "-X
// main.buildRevision=..."), for builds Go stamps none into; a revision in
// the build information takes precedence.
var buildRevision string

// buildVersion is the binary's part of the version document: the module
// version and VCS revision from the build information bi (ok false: none,
// as under go test without -buildvcs), the Go version and platform.
func buildVersion(bi *debug.BuildInfo, ok bool) versionJSON {
	doc := versionJSON{Version: "(devel)", Revision: buildRevision, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if !ok || bi == nil {
		return doc
	}
	if bi.Main.Version != "" {
		doc.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		doc.GoVersion = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			if s.Value != "" {
				doc.Revision = s.Value
			}
		case "vcs.modified":
			doc.Modified = s.Value == "true"
		}
	}
	return doc
}
