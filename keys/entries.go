package keys

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentstore/sessionstore/store"
)

var _ store.KeyLister = (*Ring)(nil)

// KeyEntries lists the ring's data keys with their files' modification
// times (a key's creation, or its last re-wrap: never earlier than its
// creation). A key shredded while the directory is read is left out.
func (r *Ring) KeyEntries(_ context.Context) ([]store.KeyEntry, error) {
	ids, err := r.IDs()
	if err != nil {
		return nil, err
	}
	out := make([]store.KeyEntry, 0, len(ids))
	for _, id := range ids {
		fi, err := os.Stat(filepath.Join(r.dir, id))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, store.KeyEntry{ID: id, CreatedAt: fi.ModTime()})
	}
	return out, nil
}
