package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

var _ = registerRelRole("create-full", createFullRole)

// createFullReport is what the create-full helper found: per amount of
// space left, how creating a store ended.
type createFullReport struct {
	Attempts int      `json:"attempts"`
	Created  int      `json:"created"`
	Full     int      `json:"full"`
	Bad      []string `json:"bad"` // outcomes other than success or ErrStorageFull, and files left behind
}

// createFullRole creates a store on a small file system with less and
// less space left (a ballast file takes the rest), once per amount.
func createFullRole(ctx context.Context, args []string, out *lineWriter) error {
	dir := args[0]
	var rep createFullReport
	ballast := filepath.Join(dir, "ballast")
	for kib := 0; kib <= 2880; kib += 96 {
		rep.Attempts++
		os.Remove(ballast)
		if err := os.WriteFile(ballast, make([]byte, kib<<10), 0o600); err != nil {
			rep.Bad = append(rep.Bad, fmt.Sprintf("%d KiB of ballast: %v", kib, err))
			continue
		}
		path := filepath.Join(dir, fmt.Sprintf("s-%d.db", kib))
		st, err := sqlstore.Open(ctx, path)
		switch {
		case err == nil:
			rep.Created++
			if err := st.Close(); err != nil {
				rep.Bad = append(rep.Bad, fmt.Sprintf("%d KiB: close: %v", kib, err))
			}
		case errors.Is(err, store.ErrStorageFull):
			rep.Full++
			if _, serr := os.Stat(path); serr == nil {
				rep.Bad = append(rep.Bad, fmt.Sprintf("%d KiB: a failed create left the file %s", kib, filepath.Base(path)))
			}
		default:
			rep.Bad = append(rep.Bad, fmt.Sprintf("%d KiB: %v", kib, err))
		}
		for _, suffix := range []string{"", "-wal", "-shm", "-writer.lock"} {
			os.Remove(path + suffix)
		}
	}
	return out.JSON(rep)
}

// TestCreateOnFullDisk: creating a store on a file system that fills up
// during the creation (at every step of it: the migrations, the log's
// checkpoint) fails with ErrStorageFull and leaves no database file;
// never a damaged file reported as ErrCorrupt (which a failed checkpoint
// at the end of the creation used to give).
func TestCreateOnFullDisk(t *testing.T) {
	skipShort(t)
	if raceDetector {
		// 31 creations in a row and no concurrency: 3 minutes under the
		// detector against 6 s without it, where test.sh runs it.
		t.Skip("run by test.sh without the race detector")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare not available")
	}
	probe := exec.Command("unshare", "-rm", "sh", "-c", `d=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs "$d"`)
	if out, err := probe.CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s)", err, out)
	}
	dir := t.TempDir()
	// 3 MiB: a new store's file and log take a little more than 2 MiB
	// since migration 30 (at 2 MiB every creation was full).
	mount := `mount -t tmpfs -o size=3m tmpfs "$1" && shift && exec "$@"`
	h := startHelperCmd(t, []string{"unshare", "-rm", "sh", "-c", mount, "sh", dir}, "create-full", dir)
	lines, err := h.wait()
	if err != nil || len(lines) != 1 {
		t.Fatalf("helper: %v, %q", err, lines)
	}
	var rep createFullReport
	if err := jsonUnmarshal(lines[0], &rep); err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", rep)
	if len(rep.Bad) > 0 {
		t.Fatalf("creating a store on a full disk:\n%s", fmt.Sprint(rep.Bad))
	}
	if rep.Created == 0 || rep.Full == 0 {
		t.Fatalf("%d created, %d full of %d: the sizes tried do not span both outcomes", rep.Created, rep.Full, rep.Attempts)
	}
}
