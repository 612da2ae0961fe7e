package console_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/console"
	"github.com/agentstore/sessionstore/store"
)

// listingsOnly hides every method of a backend's Store but store.Store's
// (and ReadOnly), so that the console cannot use store.Totaler and counts
// by reading the listings.
type listingsOnly struct{ store.Store }

func (l listingsOnly) ReadOnly() bool { return l.Store.(interface{ ReadOnly() bool }).ReadOnly() }

// TestOverviewWithoutTotaler: a store that is not a store.Totaler gets the
// same overview and the same metrics, counted from its listings.
func TestOverviewWithoutTotaler(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		st, f, _ := seeded(t, b)
		if _, ok := st.(store.Totaler); !ok {
			t.Fatal("the backend's Store is not a store.Totaler: this test compares the two paths")
		}
		var plain store.Store = listingsOnly{st}
		if _, ok := plain.(store.Totaler); ok {
			t.Fatal("listingsOnly is still a store.Totaler")
		}
		srvTotals := newServer(t, st, f, console.Options{})
		srvPlain := newServer(t, plain, f, console.Options{})

		overview := func(srv string, body string) map[string]json.RawMessage {
			t.Helper()
			var doc map[string]json.RawMessage
			if err := json.Unmarshal([]byte(body), &doc); err != nil {
				t.Fatalf("%s overview: %v\n%s", srv, err, truncate(body))
			}
			return doc
		}
		_, bodyT := get(t, srvTotals, prefix+"/?format=json")
		resp, bodyP := get(t, srvPlain, prefix+"/?format=json")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("overview without Totaler: %d\n%s", resp.StatusCode, bodyP)
		}
		withT, withoutT := overview("Totaler", bodyT), overview("listings", bodyP)
		for _, k := range []string{"stats", "top_conversations_by_cost", "spend_by_day", "recent_refusals", "uses_by_day"} {
			if string(withT[k]) != string(withoutT[k]) {
				t.Errorf("overview %q differs:\nTotaler:  %s\nlistings: %s", k, withT[k], withoutT[k])
			}
		}
		var s struct {
			Governed struct {
				Total int64 `json:"total"`
			} `json:"governed"`
		}
		if err := json.Unmarshal(withoutT["stats"], &s); err != nil || s.Governed.Total == 0 {
			t.Fatalf("overview without Totaler counted %d governed sessions (%v)", s.Governed.Total, err)
		}

		metrics := func(body string) []string {
			var out []string
			for _, line := range strings.Split(body, "\n") {
				if strings.HasPrefix(line, "sessionstore_") && !strings.HasPrefix(line, "sessionstore_scrape_duration") {
					out = append(out, line)
				}
			}
			slices.Sort(out)
			return out
		}
		_, mT := get(t, srvTotals, prefix+"/metrics")
		_, mP := get(t, srvPlain, prefix+"/metrics")
		if a, b := metrics(mT), metrics(mP); !slices.Equal(a, b) || len(a) == 0 {
			t.Errorf("metrics differ:\nTotaler:\n%s\nlistings:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
		}
	})
}
