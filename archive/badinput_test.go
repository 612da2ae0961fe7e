package archive_test

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/archive"
	"github.com/agentstore/sessionstore/store"
)

// TestImportRefusesBadInput: a newer version, another format, malformed
// JSON, an unknown section, a duplicate id, a record that exists, and a
// bad record after good ones are each a clear error, and the store holds
// nothing of the file afterwards.
func TestImportRefusesBadInput(t *testing.T) {
	src := sqliteBackend.open(t)
	fixture(t, src)
	good, _ := export(t, src, archive.ExportOptions{})
	// The last governed session made invalid: the ones before it are
	// valid and would be written first.
	broken := bytes.Replace(good, []byte(`"id": "g-used"`), []byte(`"id": ""`), 1)
	if bytes.Equal(broken, good) {
		t.Fatal("the fixture has no g-used")
	}
	for _, c := range []struct {
		name, doc string
		is        error
		says      string
	}{
		{"newer version", `{"format": "sessionctl-export", "version": 99}`, store.ErrInvalidInput, "export version 99 is not supported (this binary reads 1 to " + strconv.Itoa(archive.Version) + ")"},
		{"other format", `{"format": "other", "version": 1}`, store.ErrInvalidInput, `unknown format "other"`},
		{"malformed", `{"format": "sessionctl-export", "version": 3, "governed_sessions": [`, store.ErrInvalidInput, "unexpected end"},
		{"unknown section", `{"format": "sessionctl-export", "version": 3, "extra": []}`, store.ErrInvalidInput, `unknown field "extra"`},
		{"section before version", `{"format": "sessionctl-export", "governed_sessions": []}`, store.ErrInvalidInput, "must come before"},
		{"not JSON", `hello`, store.ErrInvalidInput, "not a JSON object"},
		{"bad record after good ones", string(broken), store.ErrInvalidInput, "governed_sessions[2]"},
	} {
		dst := sqliteBackend.open(t)
		_, err := archive.Import(t.Context(), dst, strings.NewReader(c.doc), archive.ImportOptions{})
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %v saying %q", c.name, err, c.is, c.says)
		}
		got, counts := export(t, dst, archive.ExportOptions{})
		if counts != (archive.Counts{}) {
			t.Errorf("%s: the refused import left %+v:\n%s", c.name, counts, got)
		}
	}
	// A record that exists: a conflict, and nothing of the file written;
	// with SkipExisting the rest comes in.
	dst := sqliteBackend.open(t)
	if _, err := dst.Conversations().Save(t.Context(), store.NewConversation("c-2")); err != nil {
		t.Fatal(err)
	}
	if _, err := archive.Import(t.Context(), dst, bytes.NewReader(good), archive.ImportOptions{}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("an existing conversation: %v, want ErrConflict", err)
	}
	if _, err := dst.Governance().Get(t.Context(), "g-active"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the refused import wrote a governed session: %v", err)
	}
	res, err := archive.Import(t.Context(), dst, bytes.NewReader(good), archive.ImportOptions{SkipExisting: true})
	if err != nil || res.Skipped != 1 || res.Conversations != 1 || res.Governed != 3 {
		t.Errorf("with SkipExisting: %+v, %v", res, err)
	}
	// A dry run writes nothing and needs no store.
	res, err = archive.Import(t.Context(), nil, bytes.NewReader(good), archive.ImportOptions{DryRun: true})
	if err != nil || res.Governed != 3 {
		t.Errorf("dry run: %+v, %v", res, err)
	}
	if _, err := archive.Import(t.Context(), nil, bytes.NewReader(good), archive.ImportOptions{}); !errors.Is(err, store.ErrInvalidInput) {
		t.Errorf("a nil store outside a dry run: %v", err)
	}
}
