package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/keys"
)

func sctl(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestKeysRotateAndStatus creates encrypted agent sessions through the
// CLI (demo), rotates the keyring to a new KEK version, and reads the
// sessions with the new version alone.
func TestKeysRotateAndStatus(t *testing.T) {
	t.Setenv(keys.EnvVar, "")
	t.Setenv("SESSIONSTORE_KEY_FILE", "")
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	v1, _ := keys.GenerateEntry("v1")
	v2, _ := keys.GenerateEntry("v2")
	kf := filepath.Join(dir, "kek")
	if err := os.WriteFile(kf, []byte(v1+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := sctl(t, "--db", db, "--key-file", kf, "demo"); code != 0 {
		t.Fatalf("demo: %d %s", code, errs)
	}
	code, out, errs := sctl(t, "--db", db, "--key-file", kf, "keys", "status", "--json")
	var st keysJSON
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.Keys == 0 || st.ByVersion["v1"] != st.Keys {
		t.Fatalf("status: %d %s %s", code, out, errs)
	}
	// Without keys the encrypted sessions are refused, never shown.
	if code, out, errs := sctl(t, "--db", db, "agents", "list", "--json"); code != exitError || !strings.Contains(errs, "encryption key unavailable") {
		t.Fatalf("agents without keys: %d %s %s", code, out, errs)
	}
	if err := os.WriteFile(kf, []byte(v1+"\n"+v2+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs = sctl(t, "--db", db, "--key-file", kf, "keys", "rotate", "--json")
	var rot keysJSON
	if code != 0 || json.Unmarshal([]byte(out), &rot) != nil || rot.Rewrapped == nil || *rot.Rewrapped != st.Keys ||
		rot.ByVersion["v2"] != st.Keys || rot.Current != "v2" {
		t.Fatalf("rotate: %d %s %s", code, out, errs)
	}
	// The old KEK destroyed: v2 alone reads every agent session.
	t.Setenv(keys.EnvVar, v2)
	if code, out, errs := sctl(t, "--db", db, "stats"); code != 0 {
		t.Fatalf("stats with v2 only: %d %s %s", code, out, errs)
	}
	if code, _, errs := sctl(t, "--db", db, "keys", "status"); code != 0 {
		t.Fatalf("status with v2 from the environment: %d %s", code, errs)
	}
	// Usage and key errors.
	t.Setenv(keys.EnvVar, "")
	if code, _, _ := sctl(t, "--db", db, "keys", "rotate"); code != exitUsage {
		t.Fatalf("rotate without keys: exit %d, want %d", code, exitUsage)
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := sctl(t, "--db", db, "--key-file", bad, "list"); code == 0 || !strings.Contains(errs, "key-encryption keys") {
		t.Fatalf("bad key file: %d %s", code, errs)
	}
}
