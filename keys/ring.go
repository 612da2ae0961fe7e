package keys

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"

	"github.com/agentstore/sessionstore/store"
)

// DefaultCacheSize is how many unwrapped data keys a Ring keeps in memory
// by default.
const DefaultCacheSize = 4096

// RingDir is the default keyring directory of a SQLite database file.
func RingDir(dbPath string) string { return dbPath + ".keyring" }

// Ring is the directory keyring (see the package documentation). It
// implements store.KeyRing.
type Ring struct {
	dir string
	p   store.KeyProvider
	max int

	mu    sync.Mutex
	cache map[string][]byte
	// gone holds the ids this Ring found shredded after it had held
	// them (a cached key whose file went): ShreddedHere says so even if
	// the shred log missed them.
	gone map[string]bool
}

// shredLog is the file of a keyring directory that lists the ids of the
// keys shredded in it, one a line (see Ring.ShreddedHere). Its name is
// not a key id, so it is never taken for a key.
const shredLog = ".shredded"

var _ store.KeyRing = (*Ring)(nil)

// RingOptions configure a Ring.
type RingOptions struct {
	// CacheSize bounds the unwrapped data keys kept in memory
	// (DefaultCacheSize when 0; negative: no cache).
	CacheSize int
	// NoCreate makes OpenRing fail with a *RingDirError (matching
	// fs.ErrNotExist) when the directory does not exist, instead of
	// creating it: for a program that must only read keys, or that was
	// told where the keyring is and must not start a new one elsewhere.
	NoCreate bool
}

// RingDirError: the keyring directory Dir cannot be opened (it does not
// exist, or is not a directory). Error() names the directory; errors.Is
// matches Err (fs.ErrNotExist for a missing directory).
type RingDirError struct {
	// Dir is the keyring directory as given.
	Dir string
	// Err is the cause.
	Err error
}

// Error says which directory and why.
func (e *RingDirError) Error() string {
	if errors.Is(e.Err, fs.ErrNotExist) {
		return fmt.Sprintf("keyring directory %s does not exist", e.Dir)
	}
	if errors.Is(e.Err, syscall.ENOTDIR) {
		return fmt.Sprintf("keyring %s is not a directory", e.Dir)
	}
	return fmt.Sprintf("keyring directory %s: %v", e.Dir, e.Err)
}

// Unwrap returns the cause.
func (e *RingDirError) Unwrap() error { return e.Err }

// OpenRing opens the keyring directory dir, whose keys are wrapped by p.
// A directory that does not exist is created (mode 0700, with its
// parents) when the first key is written, unless opts.NoCreate: a program
// that only reads, or that finds no encrypted row, leaves no empty
// keyring behind.
func OpenRing(dir string, p store.KeyProvider, opts RingOptions) (*Ring, error) {
	if p == nil {
		return nil, errors.New("keys: OpenRing needs a key provider")
	}
	if opts.NoCreate {
		fi, err := os.Stat(dir)
		switch {
		case err != nil:
			return nil, &RingDirError{Dir: dir, Err: err}
		case !fi.IsDir():
			return nil, &RingDirError{Dir: dir, Err: syscall.ENOTDIR}
		}
	} else if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return nil, &RingDirError{Dir: dir, Err: syscall.ENOTDIR}
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, &RingDirError{Dir: dir, Err: err}
	}
	n := opts.CacheSize
	if n == 0 {
		n = DefaultCacheSize
	}
	return &Ring{dir: dir, p: p, max: max(n, 0), cache: make(map[string][]byte), gone: make(map[string]bool)}, nil
}

// Dir returns the keyring directory.
func (r *Ring) Dir() string { return r.dir }

// keyFile is the content of one keyring file.
type keyFile struct {
	Format  int    `json:"format"`
	KEK     string `json:"kek"`
	Wrapped []byte `json:"wrapped"`
}

// validID reports whether id has the form NewKey gives (32 lower-case hex
// digits): ids are data, never paths.
func validID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for _, c := range id {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func wrapAD(id string) []byte { return AD("sessionstore data key", id) }

// NewKey creates, wraps and durably stores a random data key.
func (r *Ring) NewKey(ctx context.Context) (string, []byte, error) {
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	id := hex.EncodeToString(raw[:])
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	v := r.p.CurrentVersion()
	w, err := r.p.Wrap(ctx, v, key, wrapAD(id))
	if err != nil {
		return "", nil, err
	}
	if err := r.write(id, keyFile{Format: 1, KEK: v, Wrapped: w}); err != nil {
		return "", nil, err
	}
	r.remember(id, key)
	return id, key, nil
}

// Key returns the data key named id, from the cache or unwrapped from its
// file. A cached key is handed out only while its file exists (one stat
// per call): a key shredded by another Ring, in this process or another,
// is ErrKeyShredded here too from then on.
func (r *Ring) Key(ctx context.Context, id string) ([]byte, error) {
	if !validID(id) {
		return nil, &store.KeyError{KeyID: id, Op: "load", Kind: store.ErrKeyMismatch}
	}
	r.mu.Lock()
	k, ok := r.cache[id]
	r.mu.Unlock()
	if ok {
		_, err := os.Stat(filepath.Join(r.dir, id))
		if err == nil {
			return k, nil
		}
		r.mu.Lock()
		delete(r.cache, id)
		if errors.Is(err, fs.ErrNotExist) {
			r.gone[id] = true
		}
		r.mu.Unlock()
		if errors.Is(err, fs.ErrNotExist) {
			return nil, r.shreddedErr(id)
		}
		return nil, &store.KeyError{KeyID: id, Ring: r.dir, Op: "load", Kind: store.ErrKeyUnavailable, Err: err}
	}
	f, err := r.read(id)
	if err != nil {
		return nil, err
	}
	k, err = r.p.Unwrap(ctx, f.KEK, f.Wrapped, wrapAD(id))
	if err != nil {
		var ke *store.KeyError
		if errors.As(err, &ke) {
			ke.KeyID, ke.Ring = id, r.dir
			return nil, ke
		}
		return nil, &store.KeyError{KeyID: id, KEKVersion: f.KEK, Ring: r.dir, Op: "unwrap", Kind: store.ErrKeyUnavailable, Err: err}
	}
	r.remember(id, k)
	return k, nil
}

// Shred unlinks the key's file and syncs the directory. Before the
// unlink it notes the id in the directory's shred log (see ShreddedHere):
// a note without a sync of its own, so a crash may lose it, which only
// makes a later error say "not in the keyring" instead of "shredded".
func (r *Ring) Shred(_ context.Context, id string) error {
	if !validID(id) {
		return &store.KeyError{KeyID: id, Op: "shred", Kind: store.ErrKeyMismatch}
	}
	r.mu.Lock()
	delete(r.cache, id)
	r.mu.Unlock()
	path := filepath.Join(r.dir, id)
	if _, err := os.Stat(path); err == nil {
		r.noteShred(id)
	}
	err := os.Remove(path)
	if errors.Is(err, fs.ErrNotExist) {
		if _, derr := os.Stat(r.dir); errors.Is(derr, fs.ErrNotExist) {
			return nil // the directory was never created: no key to shred
		}
	} else if err != nil {
		return err
	}
	return syncDir(r.dir)
}

// maxShredLog bounds the shred log's size: past it, the next note first
// keeps only the newer half of the lines. 1 MiB holds the last ~31,000
// shreds; a key shredded before them is then said to be "not in the
// keyring" rather than "shredded" (the key is gone either way). A
// variable for tests.
var maxShredLog int64 = 1 << 20

// noteShred appends id to the shred log (best effort: see Shred). One
// write of a whole line to a file opened for appending: lines of
// processes shredding at once do not interleave. A log past maxShredLog
// is first cut to its newer half (trimShredLog).
func (r *Ring) noteShred(id string) {
	path := filepath.Join(r.dir, shredLog)
	if fi, err := os.Stat(path); err == nil && fi.Size() >= maxShredLog {
		r.trimShredLog(path)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	_, _ = f.Write([]byte(id + "\n"))
	_ = f.Close()
}

// trimShredLog replaces the shred log by its newer half, whole lines, by a
// temporary file renamed over it (best effort, like the log itself: a note
// another process appends to the old file meanwhile may be lost).
func (r *Ring) trimShredLog(path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	keep := b[len(b)/2:]
	if i := bytes.IndexByte(keep, '\n'); i >= 0 {
		keep = keep[i+1:]
	}
	tmp, err := os.CreateTemp(r.dir, ".tmp-shredded-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(keep)
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), path) != nil {
		_ = os.Remove(tmp.Name())
	}
}

// ShreddedHere reports whether the key named id was shredded in this
// keyring: by this Ring or another one on the same directory, in any
// process (the directory's shred log), or seen gone by this Ring after it
// had held it. A key whose file is missing and that is not known to have
// been shredded here was never in this keyring (as far as it can tell):
// an export's key looked for in the keyring of another store, say.
func (r *Ring) ShreddedHere(_ context.Context, id string) (bool, error) {
	if !validID(id) {
		return false, nil
	}
	r.mu.Lock()
	gone := r.gone[id]
	r.mu.Unlock()
	if gone {
		return true, nil
	}
	b, err := os.ReadFile(filepath.Join(r.dir, shredLog))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	// Lines are 32 hex digits and a newline: a match cannot straddle two.
	return bytes.Contains(b, []byte(id)), nil
}

// shreddedErr is the error of a key whose file is gone.
func (r *Ring) shreddedErr(id string) error {
	return &store.KeyError{KeyID: id, Ring: r.dir, Op: "load", Kind: store.ErrKeyShredded}
}

// IDs returns the ids of the keys in the ring, sorted (none when the
// directory was never created).
func (r *Ring) IDs() ([]string, error) {
	ents, err := os.ReadDir(r.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range ents {
		if e.Type().IsRegular() && validID(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// Status is what a keyring holds.
type Status struct {
	// Dir is the keyring directory.
	Dir string `json:"dir"`
	// Current is the provider's current KEK version.
	Current string `json:"current"`
	// Keys is the number of data keys.
	Keys int `json:"keys"`
	// ByVersion counts the data keys by the KEK version that wraps them.
	ByVersion map[string]int `json:"by_version"`
}

// Status counts the ring's keys by KEK version.
func (r *Ring) Status(_ context.Context) (Status, error) {
	ids, err := r.IDs()
	if err != nil {
		return Status{}, err
	}
	st := Status{Dir: r.dir, Current: r.p.CurrentVersion(), ByVersion: map[string]int{}}
	for _, id := range ids {
		f, err := r.read(id)
		if errors.Is(err, store.ErrKeyShredded) {
			continue // shredded meanwhile
		}
		if err != nil {
			return Status{}, err
		}
		st.Keys++
		st.ByVersion[f.KEK]++
	}
	return st, nil
}

// RotateResult reports a rotation.
type RotateResult struct {
	// Rewrapped is how many keys this call re-wrapped.
	Rewrapped int `json:"rewrapped"`
	// Current is how many keys were already under the current version.
	Current int `json:"already_current"`
	// Version is the KEK version every key is now wrapped under.
	Version string `json:"version"`
}

// afterRewrap, when set (tests only), runs after each key is re-wrapped.
var afterRewrap func(n int)

// Rotate re-wraps every data key not yet under the provider's current KEK
// version; content is not touched (the data keys do not change). Each
// file is replaced atomically and says its version, so an interrupted
// rotation is resumed by running Rotate again. Afterwards the old KEK
// versions are no longer needed.
func (r *Ring) Rotate(ctx context.Context) (RotateResult, error) {
	ids, err := r.IDs()
	if err != nil {
		return RotateResult{}, err
	}
	cur := r.p.CurrentVersion()
	res := RotateResult{Version: cur}
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		f, err := r.read(id)
		if errors.Is(err, store.ErrKeyShredded) {
			continue
		}
		if err != nil {
			return res, err
		}
		if f.KEK == cur {
			res.Current++
			continue
		}
		k, err := r.p.Unwrap(ctx, f.KEK, f.Wrapped, wrapAD(id))
		if err != nil {
			return res, fmt.Errorf("keys: rotate: %w", err)
		}
		w, err := r.p.Wrap(ctx, cur, k, wrapAD(id))
		if err != nil {
			return res, err
		}
		if err := r.write(id, keyFile{Format: 1, KEK: cur, Wrapped: w}); err != nil {
			return res, err
		}
		res.Rewrapped++
		if afterRewrap != nil {
			afterRewrap(res.Rewrapped)
		}
	}
	return res, nil
}

func (r *Ring) remember(id string, k []byte) {
	if r.max == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.cache) >= r.max {
		for old := range r.cache { // evict one arbitrary key
			delete(r.cache, old)
			break
		}
	}
	r.cache[id] = k
}

func (r *Ring) read(id string) (keyFile, error) {
	b, err := os.ReadFile(filepath.Join(r.dir, id))
	if errors.Is(err, fs.ErrNotExist) {
		return keyFile{}, r.shreddedErr(id)
	}
	if err != nil {
		return keyFile{}, err
	}
	var f keyFile
	if err := json.Unmarshal(b, &f); err != nil || f.Format != 1 || f.KEK == "" {
		return keyFile{}, &store.KeyError{KeyID: id, Op: "load", Kind: store.ErrKeyMismatch, Err: errors.New("malformed keyring file")}
	}
	return f, nil
}

// write replaces the key's file atomically and durably: a temporary file
// in the directory, fsync, rename, fsync of the directory.
func (r *Ring) write(id string, f keyFile) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	if err := r.makeDir(); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(r.dir, ".tmp-"+id+"-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			_ = tmp.Close()
			_ = os.Remove(name)
		}
	}()
	if err := tmp.Chmod(0o600); err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(name, filepath.Join(r.dir, id)); err != nil {
		return err
	}
	ok = true
	return syncDir(r.dir)
}

// makeDir creates the ring's directory if it does not exist yet (mode
// 0700) and makes its entry durable in its parent.
func (r *Ring) makeDir() error {
	if _, err := os.Stat(r.dir); err == nil {
		return nil
	}
	if err := os.MkdirAll(r.dir, 0o700); err != nil {
		return err
	}
	return syncDir(filepath.Dir(filepath.Clean(r.dir)))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}

// WrappingVersion returns the version of the key-encryption key that
// wraps data key id in the keyring directory dir, reading the key's file
// without unwrapping it (no key-encryption key is needed): what an
// operator must supply to read the data it protects. A key whose file is
// gone is store.ErrKeyAbsent; ids are data, never paths (an id NewKey
// cannot have given is store.ErrKeyMismatch).
func WrappingVersion(dir, id string) (string, error) {
	if !validID(id) {
		return "", &store.KeyError{KeyID: id, Op: "load", Kind: store.ErrKeyMismatch}
	}
	b, err := os.ReadFile(filepath.Join(dir, id))
	if errors.Is(err, fs.ErrNotExist) {
		return "", &store.KeyError{KeyID: id, Ring: dir, Op: "load", Kind: store.ErrKeyAbsent, Err: err}
	}
	if err != nil {
		return "", err
	}
	var f keyFile
	if err := json.Unmarshal(b, &f); err != nil || f.Format != 1 || f.KEK == "" {
		return "", &store.KeyError{KeyID: id, Ring: dir, Op: "load", Kind: store.ErrKeyMismatch, Err: errors.New("malformed keyring file")}
	}
	return f.KEK, nil
}
