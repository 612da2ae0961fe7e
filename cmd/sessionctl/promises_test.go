package main

// Issue 37, the CLI's promises: a failed command creates nothing (15), a
// mistyped --keyring is a usage error that creates nothing (2), an
// import whose keyring lacks the export's key says so (3), and a dry run
// of an import checks against the store (17).

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/keys"
)

// dirNames lists the names in dir, sorted.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// noKeysEnv clears the key variables of the environment for the test.
func noKeysEnv(t *testing.T) {
	t.Setenv(keys.EnvVar, "")
	t.Setenv("SESSIONSTORE_KEY_FILE", "")
	t.Setenv("SESSIONSTORE_KEYRING", "")
	t.Setenv("SESSIONSTORE_TENANT", "")
}

// keyFile writes a key file with one new KEK into dir.
func keyFile(t *testing.T, dir string) string {
	t.Helper()
	line, err := keys.GenerateEntry("v1")
	if err != nil {
		t.Fatal(err)
	}
	kf := filepath.Join(dir, "kek")
	if err := os.WriteFile(kf, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return kf
}

// TestFailedCommandsCreateNothing (item 15): retention set on a missing
// file, an import of a missing export, and a refused --tenant import
// (with keys too) each used to leave an empty store behind; they leave
// the directory as it was. A successful import still creates the file.
func TestFailedCommandsCreateNothing(t *testing.T) {
	noKeysEnv(t)
	src := t.TempDir()
	srcDB := filepath.Join(src, "src.db")
	kf := keyFile(t, src)
	// A plaintext store: its export imports anywhere (an encrypted one
	// needs the exporting store's keyring).
	for _, args := range [][]string{
		{"--db", srcDB, "demo"},
		{"--db", srcDB, "--tenant", "t1", "create", "--id", "x", "--agent", "a", "--budget", "1"},
	} {
		if code, _, errs := sctl(t, args...); code != 0 {
			t.Fatalf("%v: %d %s", args, code, errs)
		}
	}
	exp := filepath.Join(src, "all.json")
	code, out, errs := sctl(t, "--db", srcDB, "export")
	if code != 0 {
		t.Fatalf("export: %d %s", code, errs)
	}
	if err := os.WriteFile(exp, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		code int
	}{
		{"retention set", []string{"retention", "set", "conversations_idle", "720h"}, exitError},
		{"import of a missing file", []string{"import", "nosuch.json"}, exitError},
		{"import of a missing file, with keys", []string{"--key-file", kf, "import", "nosuch.json"}, exitError},
		{"refused tenant import", []string{"--tenant", "t2", "import", exp}, exitUsage},
		{"refused tenant import, with keys", []string{"--key-file", kf, "--tenant", "t2", "import", exp}, exitUsage},
	} {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			dir := t.TempDir()
			db := filepath.Join(dir, "s.db")
			if code, _, errs := sctl(t, append([]string{"--db", db}, c.args...)...); code != c.code {
				t.Fatalf("exit %d, want %d: %s", code, c.code, errs)
			}
			if left := dirNames(t, dir); len(left) != 0 {
				t.Fatalf("the failed command left %v", left)
			}
		})
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	if code, _, errs := sctl(t, "--db", db, "--key-file", kf, "--tenant", "t1", "import", exp); code != exitUsage {
		t.Fatalf("tenant import: %d %s", code, errs)
	}
	if code, _, errs := sctl(t, "--db", db, "--key-file", kf, "import", exp); code != 0 {
		t.Fatalf("import: %d %s", code, errs)
	}
	if left := dirNames(t, dir); !slices.Contains(left, "s.db") || !slices.Contains(left, "s.db.keyring") {
		t.Fatalf("a successful import made %v", left)
	}
}

// TestKeyringMustExist (item 2): a --keyring directory that does not
// exist is a usage error naming it, and nothing is created, for a read
// (messages used to say "encryption key shredded" and create the
// directory) and for create on an existing store (which used to put the
// new key there); create of a new store starts its keyring there.
func TestKeyringMustExist(t *testing.T) {
	noKeysEnv(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	kf := keyFile(t, dir)
	ring := filepath.Join(dir, "ring")
	if err := os.Mkdir(ring, 0o700); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := sctl(t, "--db", db, "--key-file", kf, "--keyring", ring, "demo"); code != 0 {
		t.Fatalf("demo: %d %s", code, errs)
	}
	code, out, errs := sctl(t, "--db", db, "--key-file", kf, "--keyring", ring, "list", "--facet", "conversations", "--json")
	var convs struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &convs) != nil || len(convs.Items) == 0 {
		t.Fatalf("list: %d %s %s", code, out, errs)
	}
	conv := convs.Items[0].ID
	if code, _, errs := sctl(t, "--db", db, "--key-file", kf, "--keyring", ring, "messages", conv); code != 0 {
		t.Fatalf("messages with the keyring: %d %s", code, errs)
	}
	typo := filepath.Join(dir, "rnig")
	for _, args := range [][]string{
		{"messages", conv},
		{"agents", "list"},
		{"create", "--id", "new", "--agent", "a", "--budget", "1"},
		{"import", "--dry-run", "nosuch.json"},
	} {
		code, _, errs := sctl(t, append([]string{"--db", db, "--key-file", kf, "--keyring", typo}, args...)...)
		if code != exitUsage || !strings.Contains(errs, typo) || strings.Contains(errs, "shredded") {
			t.Errorf("%v with a mistyped keyring: exit %d, %s", args, code, errs)
		}
		if _, err := os.Stat(typo); !os.IsNotExist(err) {
			t.Fatalf("%v created the mistyped keyring: %v", args, err)
		}
	}
	if code, _, errs := sctl(t, "--db", db, "show", "new"); code != exitNotFound {
		t.Fatalf("the refused create made the session: %d %s", code, errs)
	}
	// A command that creates the store creates its keyring too.
	db2, ring2 := filepath.Join(dir, "new.db"), filepath.Join(dir, "new-ring")
	if code, _, errs := sctl(t, "--db", db2, "--key-file", kf, "--keyring", ring2, "demo"); code != 0 {
		t.Fatalf("demo of a new store with a new keyring: %d %s", code, errs)
	}
	if ents, err := os.ReadDir(ring2); err != nil || len(ents) == 0 {
		t.Fatalf("the new store's keyring: %v, %v", ents, err)
	}
}

// TestImportKeyAbsentNamesKeyAndRing (item 3): importing an encrypted
// export into a store whose keyring never held its keys says the key is
// not in the keyring, naming the key and the keyring (it said
// "encryption key shredded"), and leaves nothing behind.
func TestImportKeyAbsentNamesKeyAndRing(t *testing.T) {
	noKeysEnv(t)
	dir := t.TempDir()
	kf := keyFile(t, dir)
	src := filepath.Join(dir, "src.db")
	if code, _, errs := sctl(t, "--db", src, "--key-file", kf, "demo"); code != 0 {
		t.Fatalf("demo: %d %s", code, errs)
	}
	code, out, errs := sctl(t, "--db", src, "--key-file", kf, "export")
	if code != 0 {
		t.Fatalf("export: %d %s", code, errs)
	}
	exp := filepath.Join(dir, "all.json")
	if err := os.WriteFile(exp, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	srcKeys, err := os.ReadDir(keys.RingDir(src))
	if err != nil {
		t.Fatal(err)
	}
	dstDir := t.TempDir()
	dst := filepath.Join(dstDir, "dst.db")
	code, _, errs = sctl(t, "--db", dst, "--key-file", kf, "import", exp)
	if code != exitError || !strings.Contains(errs, "encryption key not in the keyring") || strings.Contains(errs, "shredded") ||
		!strings.Contains(errs, "keyring "+keys.RingDir(dst)) {
		t.Fatalf("import with another keyring: exit %d, %s", code, errs)
	}
	named := false
	for _, e := range srcKeys {
		named = named || strings.Contains(errs, "data key "+e.Name())
	}
	if !named {
		t.Fatalf("the error names none of the export's keys: %s", errs)
	}
	if left := dirNames(t, dstDir); len(left) != 0 {
		t.Fatalf("the failed import left %v", left)
	}
}

// TestImportDryRunChecksTheStore (item 17): a dry run of an import into
// a store that holds the records fails with the conflict the import
// meets (it reported success), with --skip-existing it counts them as
// skipped, and either way it changes nothing: not the database, not the
// keyring of an encrypting store (whose keys the checked records got
// are shredded).
func TestImportDryRunChecksTheStore(t *testing.T) {
	noKeysEnv(t)
	dir := t.TempDir()
	kf := keyFile(t, dir)
	db := filepath.Join(dir, "s.db")
	if code, _, errs := sctl(t, "--db", db, "--key-file", kf, "demo"); code != 0 {
		t.Fatalf("demo: %d %s", code, errs)
	}
	code, out, errs := sctl(t, "--db", db, "--key-file", kf, "export")
	if code != 0 {
		t.Fatalf("export: %d %s", code, errs)
	}
	exp := filepath.Join(dir, "all.json")
	if err := os.WriteFile(exp, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	before := fileState(t, db)
	// The keys, less the shred log (a shred of a key the check made
	// notes it there).
	keyNames := func(dir string) []string {
		return slices.DeleteFunc(dirNames(t, dir), func(n string) bool { return n == ".shredded" })
	}
	ringBefore := keyNames(keys.RingDir(db))
	code, _, dryErr := sctl(t, "--db", db, "--key-file", kf, "import", "--dry-run", exp)
	realCode, _, realErr := sctl(t, "--db", db, "--key-file", kf, "import", exp)
	if code != exitConflict || realCode != exitConflict || !strings.Contains(dryErr, "conflict") {
		t.Fatalf("dry run: exit %d %s; import: exit %d %s", code, dryErr, realCode, realErr)
	}
	if code, out, errs := sctl(t, "--db", db, "--key-file", kf, "import", "--dry-run", "--skip-existing", exp); code != 0 || !strings.Contains(out, "existing skipped") {
		t.Fatalf("dry run with --skip-existing: %d %s %s", code, out, errs)
	}
	sameFiles(t, before, fileState(t, db))
	if after := keyNames(keys.RingDir(db)); !slices.Equal(ringBefore, after) {
		t.Fatalf("keyring before %v, after %v", ringBefore, after)
	}

	// A plaintext export into an empty encrypting store: the check
	// passes, and the keys it made for the checked records are gone
	// again.
	plain := filepath.Join(dir, "plain.db")
	if code, _, errs := sctl(t, "--db", plain, "demo"); code != 0 {
		t.Fatalf("demo: %d %s", code, errs)
	}
	if code, out, errs = sctl(t, "--db", plain, "export"); code != 0 {
		t.Fatalf("export: %d %s", code, errs)
	}
	if err := os.WriteFile(exp, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.db")
	if code, _, errs := sctl(t, "--db", empty, "--key-file", kf, "create", "--id", "g", "--agent", "a", "--budget", "1"); code != 0 {
		t.Fatalf("create: %d %s", code, errs)
	}
	keysIn := func() []string {
		if _, err := os.Stat(keys.RingDir(empty)); os.IsNotExist(err) {
			return nil
		}
		return keyNames(keys.RingDir(empty))
	}
	k0 := keysIn()
	if code, out, errs := sctl(t, "--db", empty, "--key-file", kf, "import", "--dry-run", exp); code != 0 || !strings.Contains(out, "checked (dry run") {
		t.Fatalf("dry run into an empty store: %d %s %s", code, out, errs)
	}
	if k := keysIn(); len(k) != len(k0) {
		t.Fatalf("the dry run left keys: %v, before %v", k, k0)
	}
	if code, out, _ := sctl(t, "--db", empty, "list", "--facet", "conversations", "--json"); code != 0 || strings.Contains(out, "demo") {
		t.Fatalf("the dry run wrote conversations: %s", out)
	}
}
