package main

// Encryption at rest on the command line: the key-encryption keys come
// from --key-file (default $SESSIONSTORE_KEY_FILE) or $SESSIONSTORE_KEY;
// with them every command opens the store with its keyring (SQLite: the
// directory <db>.keyring beside the file; PostgreSQL: --keyring, default
// $SESSIONSTORE_KEYRING), and new agent sessions are encrypted. "keys
// status" counts the keyring's data keys by KEK version; "keys rotate"
// re-wraps them under the current version.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/agentstore/sessionstore/cmd/sessionctl/cliflags"
	"github.com/agentstore/sessionstore/cmd/sessionctl/clitext"
	"github.com/agentstore/sessionstore/cmd/sessionctl/specs"
	"github.com/agentstore/sessionstore/cmd/sessionctl/tablefmt"
	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/keys"
	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// errNoKeys: a keys command was run without key-encryption keys.
var errNoKeys = errors.New("no key-encryption keys: give --key-file FILE or set SESSIONSTORE_KEY")

// keyProvider returns the KEKs of --key-file or $SESSIONSTORE_KEY (nil:
// none given).
func (g *globals) keyProvider() (store.KeyProvider, error) {
	if g.keyFile != "" {
		return keys.FromFile(g.keyFile)
	}
	if os.Getenv(keys.EnvVar) != "" {
		return keys.FromEnv(keys.EnvVar)
	}
	return nil, nil
}

// checkKeys fails when --key-file or $SESSIONSTORE_KEY is given but does
// not hold valid keys, or --keyring cannot be opened: a command must never
// fall back to writing plaintext sessions. A --keyring directory that does
// not exist is a usage error naming it, and nothing is created (a
// mistyped path used to read as "encryption key shredded", and create
// started a new keyring there), unless command (with args) creates the
// store itself and the store does not exist yet: then the keyring is new
// too.
func (g *globals) checkKeys(ctx context.Context, command string, args []string) error {
	p, err := g.keyProvider()
	if err != nil {
		return g.keySourceErr(err)
	}
	if p != nil && g.keyring != "" {
		_, err := keys.OpenRing(g.keyring, p, keys.RingOptions{NoCreate: true})
		var de *keys.RingDirError
		switch {
		case err == nil:
		case errors.As(err, &de) && errors.Is(err, fs.ErrNotExist):
			if !g.createsStore(ctx, command, args) {
				return &usageError{msg: fmt.Sprintf("--keyring %s: the keyring directory does not exist (only a command that creates the store starts a new keyring)", g.keyring)}
			}
		case errors.As(err, &de) && errors.Is(err, syscall.ENOTDIR):
			return &usageError{msg: fmt.Sprintf("--keyring %s is not a directory", g.keyring)}
		default:
			return fmt.Errorf("keyring: %w", err)
		}
	}
	if g.searchEncrypted && p == nil {
		return &usageError{msg: "--search-encrypted needs key-encryption keys (--key-file FILE or SESSIONSTORE_KEY): without them no encrypted session can be read, let alone indexed"}
	}
	return nil
}

// keySource names where the key-encryption keys come from, as the user
// gave them: "--key-file FILE" or "$SESSIONSTORE_KEY" ("" for none).
func (g *globals) keySource() string {
	switch {
	case g.keyFile != "":
		return "--key-file " + humanize.Escape(g.keyFile)
	case os.Getenv(keys.EnvVar) != "":
		return "$" + keys.EnvVar
	}
	return ""
}

// keySourceErr is the usage error of key-encryption keys that cannot be
// read: it names the flag or variable they came from and says what a key
// file holds (exit 2: the command line, not the store, is wrong).
func (g *globals) keySourceErr(err error) error {
	src := g.keySource()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &usageError{msg: src + ": no such file (sessionctl keys new FILE writes a key file)"}
	case errors.Is(err, keys.ErrBadKeys):
		why := strings.TrimPrefix(err.Error(), keys.ErrBadKeys.Error()+": ")
		return &usageError{msg: fmt.Sprintf("%s: not key-encryption keys: %s (expected lines VERSION:BASE64 of 32 random bytes, as sessionctl keys new FILE writes)", src, why)}
	}
	return fmt.Errorf("%s: %w", src, err)
}

// keyDetail names the data key, the key-encryption key version that wraps
// it and the keyring of an encryption error, and for a key that is
// unavailable the way to supply it ("" for other errors): the store's
// message says only what happened, the operator needs to know where and
// what to give. Without keys the version is read from the keyring's file
// of the data key (which holds no secret in the clear).
func (g *globals) keyDetail(err error) string {
	var ke *store.KeyError
	if !errors.As(err, &ke) || (ke.KeyID == "" && ke.KEKVersion == "") {
		return ""
	}
	version := ke.KEKVersion
	if version == "" && ke.KeyID != "" && errors.Is(err, store.ErrKeyUnavailable) {
		dir := ke.Ring
		if dir == "" {
			dir = g.keyringDir()
		}
		if dir != "" {
			version, _ = keys.WrappingVersion(dir, ke.KeyID)
		}
	}
	var parts []string
	if ke.KeyID != "" {
		parts = append(parts, "data key "+ke.KeyID)
	}
	if version != "" {
		parts = append(parts, "wrapped by key-encryption key version "+humanize.Escape(version))
	}
	if ke.Ring != "" {
		parts = append(parts, "keyring "+ke.Ring)
	}
	detail := " (" + strings.Join(parts, ", ") + ")"
	if !errors.Is(err, store.ErrKeyUnavailable) {
		return detail
	}
	p, _ := g.keyProvider()
	kp, _ := p.(*keys.Provider)
	switch {
	case p == nil:
		return detail + ": give the key-encryption keys with --key-file FILE or $" + keys.EnvVar
	case kp != nil && version != "" && !kp.Has(version):
		return fmt.Sprintf("%s: %s holds version %s, not %s: add the line of version %s to it",
			detail, g.keySource(), strings.Join(kp.Versions(), ", "), humanize.Escape(version), humanize.Escape(version))
	}
	return detail
}

// createsStore reports whether command, run with args, would create the
// store at --db: create, demo, import (not a dry run) and migrate up, when
// the store does not exist.
func (g *globals) createsStore(ctx context.Context, command string, args []string) bool {
	switch command {
	case "create", "demo":
	case "import":
		for _, a := range args {
			if a == "--" {
				break
			}
			if a == "--dry-run" || a == "-dry-run" || strings.HasPrefix(a, "--dry-run=") || strings.HasPrefix(a, "-dry-run=") {
				return false
			}
		}
	case "migrate":
		if !slices.Contains(args, "up") {
			return false
		}
	default:
		return false
	}
	err := g.mustExist(ctx)
	var none *errNoStore
	var nofile *errNoDatabase
	return errors.As(err, &none) || errors.As(err, &nofile)
}

// sqliteKeyOptions are the encryption options of a SQLite store (none
// without keys; a bad key file or keyring already failed in checkKeys).
func (g *globals) sqliteKeyOptions() []sqlstore.Option {
	p, err := g.keyProvider()
	if err != nil || p == nil {
		return nil
	}
	var opts []sqlstore.Option
	if g.searchEncrypted {
		opts = append(opts, sqlstore.WithSearchEncrypted())
	}
	if g.keyring == "" {
		return append(opts, sqlstore.WithKeyProvider(p))
	}
	r, err := keys.OpenRing(g.keyring, p, keys.RingOptions{})
	if err != nil {
		return nil
	}
	return append(opts, sqlstore.WithKeyRing(r))
}

// pgKeyOptions are the encryption options of a PostgreSQL store.
func (g *globals) pgKeyOptions() []pgstore.Option {
	p, err := g.keyProvider()
	if err != nil || p == nil {
		return nil
	}
	opts := []pgstore.Option{pgstore.WithKeyProvider(p, g.keyring)}
	if g.searchEncrypted {
		opts = append(opts, pgstore.WithSearchEncrypted())
	}
	return opts
}

// keyRing opens the keyring of --db with the KEKs given (nil without
// keys, or when the keyring cannot be opened: the archive then refuses
// sealed sessions with store.ErrKeyUnavailable).
func (g *globals) keyRing() store.KeyRing {
	r, err := g.openKeyRing(true)
	if err != nil {
		return nil
	}
	return r
}

// openKeyRing opens the keyring of --db with the KEKs given (nil, nil
// without keys); without create, a keyring directory that does not exist
// is no keyring (nil, nil) and is not created.
func (g *globals) openKeyRing(create bool) (store.KeyRing, error) {
	p, err := g.keyProvider()
	dir := g.keyringDir()
	if err != nil || p == nil || dir == "" {
		return nil, err
	}
	r, err := keys.OpenRing(dir, p, keys.RingOptions{NoCreate: !create})
	if !create && errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// keyringDir is the keyring directory of --db ("" on PostgreSQL without
// --keyring).
func (g *globals) keyringDir() string {
	if g.keyring != "" {
		return g.keyring
	}
	if g.isPG() {
		return ""
	}
	return keys.RingDir(g.db)
}

// keysJSON is the JSON document of keys status and keys rotate.
type keysJSON struct {
	Dir       string         `json:"dir"`
	Current   string         `json:"current_version"`
	Keys      int            `json:"keys"`
	ByVersion map[string]int `json:"by_version"`
	Rewrapped *int           `json:"rewrapped,omitempty"`
}

func runKeys(ctx context.Context, g *globals, args []string) error {
	sp := specs.Keys
	sub, args := sp.Action(args)
	fs := g.newFlags(sp)
	asJSON := fs.Bool("json", false, "print one JSON document")
	dryRun := fs.Bool("dry-run", false, "keys gc: list the orphan keys, shred nothing")
	grace := cliflags.DurationFlag(fs, "grace", store.DefaultKeyGrace, "keys gc: how old an unnamed key must be to be shredded, `DURATION`")
	version := fs.String("kek-version", "v1", "keys new: the `VERSION` of the key-encryption key it writes")
	pos, err := g.parseAction(fs, sp, sub, args)
	if err != nil {
		return err
	}
	name := sp.Name + " " + sub
	if sub == "new" {
		if len(pos) != 1 {
			return g.usageErr(name, "expected FILE, the key file to write")
		}
		return runKeysNew(g, name, pos[0], *version, *asJSON)
	}
	if err := g.wantArgs(sp, pos, 0, 0); err != nil {
		return err
	}
	if sub == "gc" {
		if *grace <= 0 {
			return g.usageErr(name, "--grace must be positive")
		}
		return runKeysGC(ctx, g, name, store.CollectKeysRequest{Grace: *grace, DryRun: *dryRun}, *asJSON)
	}
	p, err := g.keyProvider()
	if err != nil {
		return g.fail(name, err)
	}
	if p == nil {
		return g.usageErr(name, "%v", errNoKeys)
	}
	dir := g.keyringDir()
	if dir == "" {
		return g.usageErr(name, "a PostgreSQL store needs --keyring DIR (or SESSIONSTORE_KEYRING)")
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return g.fail(name, fmt.Errorf("keyring %s does not exist (no encrypted session was created with these keys)", dir))
	}
	ring, err := keys.OpenRing(dir, p, keys.RingOptions{})
	if err != nil {
		return g.fail(name, err)
	}
	var rewrapped *int
	if sub == "rotate" {
		res, err := ring.Rotate(ctx)
		if err != nil {
			return g.fail(name, err)
		}
		rewrapped = &res.Rewrapped
	}
	st, err := ring.Status(ctx)
	if err != nil {
		return g.fail(name, err)
	}
	if *asJSON {
		return g.jsonOr(name, keysJSON{Dir: st.Dir, Current: st.Current, Keys: st.Keys, ByVersion: st.ByVersion, Rewrapped: rewrapped})
	}
	if rewrapped != nil {
		fmt.Fprintf(g.stdout, "re-wrapped %d data %s under %s\n", *rewrapped, clitext.Plural(*rewrapped, "key", "keys"), st.Current)
	}
	fmt.Fprintf(g.stdout, "keyring %s: %d data %s, current KEK version %s\n", st.Dir, st.Keys, clitext.Plural(st.Keys, "key", "keys"), st.Current)
	if len(st.ByVersion) == 0 {
		return nil
	}
	tw := tablefmt.NewWriter(g.stdout)
	fmt.Fprintln(tw, "KEK VERSION\tDATA KEYS\t")
	versions := make([]string, 0, len(st.ByVersion))
	for v := range st.ByVersion {
		versions = append(versions, v)
	}
	sort.Strings(versions)
	for _, v := range versions {
		mark := ""
		if v == st.Current {
			mark = " (current)"
		}
		fmt.Fprintf(tw, "%s%s\t%d\t\n", v, mark, st.ByVersion[v])
	}
	return tw.Flush()
}

// runKeysGC collects the orphan data keys of --db's keyring (keys gc).
func runKeysGC(ctx context.Context, g *globals, name string, req store.CollectKeysRequest, asJSON bool) error {
	p, err := g.keyProvider()
	if err != nil {
		return g.fail(name, err)
	}
	if p == nil {
		return g.usageErr(name, "%v", errNoKeys)
	}
	if g.keyringDir() == "" {
		return g.usageErr(name, "a PostgreSQL store needs --keyring DIR (or SESSIONSTORE_KEYRING)")
	}
	if g.tenant != "" {
		return g.usageErr(name, "orphan keys are collected on the whole database: drop --tenant")
	}
	return g.result(name, g.withStore(ctx, func(st cliStore) error {
		c, ok := st.(store.KeyCollector)
		if !ok {
			return fmt.Errorf("%T cannot collect orphan keys", st)
		}
		res, err := c.CollectOrphanKeys(ctx, req)
		if err != nil {
			return err
		}
		if asJSON {
			return g.jsonOr(name, res)
		}
		verb := "shredded"
		if req.DryRun {
			verb = "would shred"
		}
		fmt.Fprintf(g.stdout, "%d data %s: %d named by a session, %d unnamed within the grace period (%s), %s %d %s\n",
			res.Keys, clitext.Plural(res.Keys, "key", "keys"), res.Named, res.Young, humanize.Duration(req.Grace), verb, len(res.Orphans), clitext.Plural(len(res.Orphans), "orphan", "orphans"))
		for _, id := range res.Orphans {
			fmt.Fprintln(g.stdout, id)
		}
		return nil
	}))
}

// keysNewJSON is keys new's --json document: where the key went, never
// the key.
type keysNewJSON struct {
	File    string `json:"file"`
	Version string `json:"version"`
}

// runKeysNew writes a new key file (keys new): one key-encryption key of
// 32 random bytes as version, mode 0600, created exclusively and synced,
// so that an existing file, another key, is never overwritten.
func runKeysNew(g *globals, name, path, version string, asJSON bool) error {
	err := keys.CreateFile(path, version)
	switch {
	case errors.Is(err, keys.ErrBadKeys):
		return g.usageErr(name, "--kek-version %s: %v", humanize.Escape(version), err)
	case errors.Is(err, fs.ErrExist):
		return g.usageErr(name, "%s exists: a key file is never overwritten (its keys may still seal data)", humanize.Escape(path))
	case err != nil:
		return g.fail(name, err)
	}
	return g.result(name, g.say(asJSON, keysNewJSON{File: path, Version: version}, "wrote key-encryption key %s to %s (mode 0600); give it with --key-file %s\n", humanize.Escape(version), humanize.Escape(path), humanize.Escape(path)))
}
