package store

// ListAppsRequest pages the applications of the agent-session facet: every
// application that has a session, app state or user state.
type ListAppsRequest struct {
	// Cursor is the Next of the previous page; empty for the first page.
	Cursor string
	// Limit bounds the page; 0 means DefaultPageSize, at most MaxPageSize.
	Limit int
}

// Normalize validates r and applies the default limit.
func (r ListAppsRequest) Normalize() (ListAppsRequest, error) {
	if r.Cursor != "" {
		if err := ValidateID("cursor", r.Cursor); err != nil {
			return r, err
		}
	}
	return r, normalizeLimit(&r.Limit)
}

// ListUsersRequest pages the users of one application: every user that has
// a session or user state in it.
type ListUsersRequest struct {
	// App is required.
	App string
	// Cursor is the Next of the previous page; empty for the first page.
	Cursor string
	// Limit bounds the page; 0 means DefaultPageSize, at most MaxPageSize.
	Limit int
}

// Normalize validates r and applies the default limit.
func (r ListUsersRequest) Normalize() (ListUsersRequest, error) {
	if err := ValidateID("app", r.App); err != nil {
		return r, err
	}
	if r.Cursor != "" {
		if err := ValidateID("cursor", r.Cursor); err != nil {
			return r, err
		}
	}
	return r, normalizeLimit(&r.Limit)
}
