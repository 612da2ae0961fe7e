package pgstore

import (
	"context"

	"github.com/agentstore/sessionstore/store"
)

var _ store.Searcher = (*Store)(nil)

// startIndexer applies WithSearchIndex and starts the background indexer
// (see WithSearchIndex); a read-only store runs none.
func (s *Store) startIndexer(ctx context.Context) error {
	if s.cfg.readOnly {
		return nil
	}
	ix, err := s.core.OpenIndexer(ctx, s.cfg.searchIndex, !s.cfg.noIndexer, s.cfg.indexer)
	s.indexer = ix
	return err
}

// trigramExtension reports whether the schema's search index is pg_trgm's
// (search_docs_trgm, migration 42) rather than sessionstore_trigrams'.
func (s *Store) trigramExtension(ctx context.Context) (bool, error) {
	var on bool
	if err := s.pool.QueryRow(ctx, `SELECT to_regclass('search_docs_trgm') IS NOT NULL`).Scan(&on); err != nil {
		return false, mapErr(err)
	}
	return on, nil
}

// Search finds stored items by their text (see store.Searcher).
func (s *Store) Search(ctx context.Context, q store.SearchQuery) (store.SearchResult, error) {
	if s.closed.Load() {
		return store.SearchResult{}, store.ErrStoreClosed
	}
	return s.core.Search(ctx, q)
}

// History returns a user's agent events across all of the user's sessions
// in one query (see store.Searcher).
func (s *Store) History(ctx context.Context, req store.HistoryRequest) (store.Page[store.HistoryItem], error) {
	if s.closed.Load() {
		return store.Page[store.HistoryItem]{}, store.ErrStoreClosed
	}
	return s.core.History(ctx, req)
}

// CheckSearchIndex compares the search index with the content (see
// store.Searcher).
func (s *Store) CheckSearchIndex(ctx context.Context) (store.SearchIndexReport, error) {
	if s.closed.Load() {
		return store.SearchIndexReport{}, store.ErrStoreClosed
	}
	return s.core.CheckSearchIndex(ctx)
}

// Reindex rebuilds the search index in batches while the store stays in
// use (see store.Searcher).
func (s *Store) Reindex(ctx context.Context, req store.ReindexRequest) (store.ReindexResult, error) {
	if s.closed.Load() {
		return store.ReindexResult{}, store.ErrStoreClosed
	}
	return s.core.Reindex(ctx, req)
}
