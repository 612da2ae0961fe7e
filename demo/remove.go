package demo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentstore/sessionstore/facet"
	"github.com/agentstore/sessionstore/migrations"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// NotStoreError: the file is not a session store, so Remove leaves it.
type NotStoreError struct {
	Path string
	// Err is why its schema version could not be read; nil when it is a
	// SQLite database without the version table.
	Err error
}

// Error names the file.
func (e *NotStoreError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s is not a session store: %v", e.Path, e.Err)
	}
	return fmt.Sprintf("%s is not a session store (no %s table)", e.Path, migrations.TableName)
}

// Unwrap returns Err.
func (e *NotStoreError) Unwrap() error { return e.Err }

// ForeignDataError: the store holds data no demo wrote (Foreign's
// descriptions), and Remove was not told to remove it anyway.
type ForeignDataError struct {
	Path  string
	Found []string
}

// Error names the database and what it holds.
func (e *ForeignDataError) Error() string {
	return fmt.Sprintf("%s holds data the demo did not write (%s)", e.Path, strings.Join(e.Found, ", "))
}

// Remove removes the SQLite database at path and the files beside it
// (sqlstore.Remove), after checking that it is a session store (else a
// *NotStoreError), that no other process holds it (else a
// *sqlstore.InUseError) and, unless force, that it holds nothing but what
// demos wrote (else a *ForeignDataError). Nothing is removed when a check
// fails.
func Remove(ctx context.Context, path string, force bool) error {
	other, err := Foreign(ctx, path)
	if err != nil {
		return err
	}
	if len(other) > 0 && !force {
		return &ForeignDataError{Path: path, Found: other}
	}
	return sqlstore.Remove(path)
}

// Foreign reads the SQLite database at path without changing it and
// describes what it holds that no demo wrote ("2 governed sessions of
// other agents", "table notes of no facet", ...): nothing for a store
// written by demos only. A file that is not a session store is a
// *NotStoreError.
func Foreign(ctx context.Context, path string) ([]string, error) {
	if _, ok, err := sqlstore.SchemaVersionAt(ctx, path); err != nil {
		return nil, &NotStoreError{Path: path, Err: err}
	} else if !ok {
		return nil, &NotStoreError{Path: path}
	}
	st, err := sqlstore.Open(ctx, path, sqlstore.WithReadOnly(true))
	if err != nil {
		return nil, err
	}
	defer st.Close()
	all, err := st.Counts(ctx)
	if err != nil {
		return nil, err
	}
	demo, err := countDemo(ctx, st)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range []struct {
		n    int64
		what string
	}{
		{all.Governed.Total - demo.governed, "governed sessions of other agents"},
		{demo.records, "recorded request ids"},
		{all.Runtime.Total - demo.runtime, "runtime sessions the demo did not write"},
		{all.Conversations.Total - demo.conversations, "conversations the demo did not write"},
		{all.AgentSessions.Total - demo.agentSessions, "agent sessions the demo did not write"},
		{all.AgentSessions.AppStateKeys, "app state keys"},
		{all.AgentSessions.UserStateKeys, "user state keys"},
	} {
		if c.n > 0 {
			out = append(out, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	db, err := sqlstore.OpenInspect(path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	tables, err := sqlstore.TablesOf(ctx, db)
	if err != nil {
		return nil, err
	}
	for _, t := range tables {
		if _, ok := facet.Owner(t); !ok && !slices.Contains(facet.SchemaTables(), t) && !slices.Contains(facet.MaintenanceTables(), t) &&
			!slices.Contains(facet.IndexTables(), t) && !slices.Contains(facet.SQLiteIndexTables(), t) &&
			!slices.Contains(facet.KeyringTables(), t) {
			out = append(out, "table "+t+" of no facet")
		}
	}
	return out, nil
}

// demoCounts counts what demos wrote: their agent's governed sessions,
// with a runtime session and a conversation of the same id (and the
// conversation's fork), the agent session and its fork, and the use
// records (a demo writes none).
type demoCounts struct{ governed, runtime, conversations, records, agentSessions int64 }

func countDemo(ctx context.Context, st *sqlstore.Store) (demoCounts, error) {
	var demo demoCounts
	for s, err := range store.AllGoverned(ctx, st.Governance(), store.ListFilter{AgentID: Agent}) {
		if err != nil {
			return demo, err
		}
		demo.governed++
		if r, err := st.Runtime().Get(ctx, s.ID); err == nil && r.AgentAlias == Agent {
			demo.runtime++
		} else if err != nil && !errors.Is(err, store.ErrNotFound) {
			return demo, err
		}
		for _, cid := range []string{s.ID, s.ID + ForkSuffix} {
			if ok, err := st.Conversations().Exists(ctx, cid); err != nil {
				return demo, err
			} else if ok {
				demo.conversations++
			}
		}
		page, err := st.Governance().(store.UseRecorder).UseRecords(ctx, store.UseRecordsRequest{SessionID: s.ID, Limit: store.MaxPageSize})
		if err != nil {
			return demo, err
		}
		demo.records += int64(len(page.Items))
		for _, sid := range []string{s.ID, s.ID + ForkSuffix} {
			_, err := st.AgentSessions().GetSession(ctx, store.GetAgentSessionRequest{Key: store.SessionKey{App: App, User: Agent, Session: sid}})
			if err == nil {
				demo.agentSessions++
			} else if !errors.Is(err, store.ErrNotFound) {
				return demo, err
			}
		}
	}
	return demo, nil
}
