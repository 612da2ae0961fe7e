-- The trigger that deletes an upload's content once no upload references
-- it (uploads_blob_gc, migration 3) must see every tenant's uploads. Run
-- by a role subject to row-level security (migration 17), it saw only the
-- transaction's tenant's, and would have deleted content that another
-- tenant's upload still references. It now runs with the rights of its
-- owner (the role that migrates, which owns the tables and so is not
-- subject to the policies), with the search path of this migration (the
-- store's schema) fixed, as a SECURITY DEFINER function must.

-- +goose Up
ALTER FUNCTION uploads_blob_gc() SECURITY DEFINER;
ALTER FUNCTION uploads_blob_gc() SET search_path FROM CURRENT;

-- +goose Down
ALTER FUNCTION uploads_blob_gc() RESET search_path;
ALTER FUNCTION uploads_blob_gc() SECURITY INVOKER;
