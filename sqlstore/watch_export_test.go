package sqlstore

// FeedState reports the open change feeds of st and whether its
// data_version poller runs (see sqlcore.Store.FeedState).
func FeedState(st *Store) (open, polling int) { return st.core.FeedState() }
