package main

// The check gc and cleanup run before they change the database: the
// library's quick check of the file (SQLite) and of every stored document
// (check.Documents); a damaged database is not rewritten.

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentstore/sessionstore/check"
	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/sqlstore"
)

// errDamaged refuses a rewrite of a damaged database.
type errDamaged struct {
	db, why string
}

func (e *errDamaged) Error() string {
	return fmt.Sprintf("%s is damaged (%s): it is not rewritten; run sessionctl doctor", e.db, e.why)
}

// checkBeforeRewrite is what gc and cleanup run before they change the
// database: SQLite's quick_check and the documents check (on PostgreSQL,
// the documents check). A damaged database is an *errDamaged; nothing is
// changed either way.
func (g *globals) checkBeforeRewrite(ctx context.Context) error {
	if err := g.mustExist(ctx); err != nil {
		return err
	}
	var err error
	if g.isPG() {
		err = pgstore.CheckIntact(ctx, g.db)
	} else {
		err = sqlstore.CheckIntact(ctx, g.db)
	}
	var d *check.DamagedError
	switch {
	case errors.As(err, &d):
		return &errDamaged{db: g.dbName(), why: d.Why}
	case err != nil && !g.isPG():
		return fmt.Errorf("%s: %w", g.db, err)
	}
	return err
}
