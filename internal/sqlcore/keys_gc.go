package sqlcore

import (
	"context"
	"slices"

	"github.com/agentstore/sessionstore/store"
)

// CollectOrphanKeys shreds the keyring's data keys that no row names and
// that are older than the grace period (see store.KeyCollector). A key is
// written to the keyring before the row that names it commits; a crash
// in between leaves a key file nobody names (it decrypts nothing). The
// grace period keeps the keys of creates in flight: the keys are listed
// first, and only those already older than the grace period when listed
// are checked against the rows, so a create would have to take longer
// than the grace period between its key's write and its commit to lose
// its key.
func (s *Store) CollectOrphanKeys(ctx context.Context, req store.CollectKeysRequest) (store.CollectKeysResult, error) {
	res := store.CollectKeysResult{DryRun: req.DryRun, Orphans: []string{}}
	if req.Grace < 0 {
		return res, store.Invalid("grace", "must not be negative")
	}
	if s.tenant != "" {
		return res, store.Invalid("tenant", "orphan keys are collected on the whole database, not through a tenant handle")
	}
	grace := req.Grace
	if grace == 0 {
		grace = store.DefaultKeyGrace
	}
	lister, ok := s.cfg.Keys.(store.KeyLister)
	if s.cfg.Keys == nil || !ok {
		return res, &store.KeyError{Op: "list", Kind: store.ErrKeyUnavailable}
	}
	entries, err := lister.KeyEntries(ctx)
	if err != nil {
		return res, err
	}
	now := s.now()
	res.Keys = len(entries)
	for _, e := range entries {
		var used int64
		if err := s.db.Scan(ctx, shredUsedSQL, []any{e.ID}, &used); err != nil {
			return res, err
		}
		switch {
		case used > 0:
			res.Named++
		case now.Sub(e.CreatedAt) < grace:
			res.Young++
		default:
			res.Orphans = append(res.Orphans, e.ID)
		}
	}
	slices.Sort(res.Orphans)
	if req.DryRun {
		return res, nil
	}
	for _, id := range res.Orphans {
		if err := s.cfg.Keys.Shred(ctx, id); err != nil {
			return res, err
		}
		res.Shredded++
	}
	if res.Shredded > 0 {
		s.log.Info("sessionstore: shredded orphan data keys", "count", res.Shredded)
	}
	return res, nil
}
