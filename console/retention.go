package console

import (
	"net/http"
	"strings"

	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
)

// ---- the retention page ---------------------------------------------------

// retentionPage is /retention: the policies stored in the database, the
// holds, the last sweeps of the log, and what the next sweep would
// remove (a dry run, which only reads).
type retentionPage struct {
	Policies []retentionPolicy      `json:"policies"`
	Holds    []store.Hold           `json:"holds"`
	Sweeps   []store.SweepRecord    `json:"sweeps"`
	Next     store.SweepReport      `json:"next"`
	Kinds    []store.PolicyKindInfo `json:"-"`
}

// retentionPolicy is a stored policy with its description.
type retentionPolicy struct {
	store.Policy
	Facet string `json:"facet"`
	About string `json:"about"`
}

// aboutPolicy is a kind's description with the policy's setting in place
// of the name of the store's parameter ("longer than 7 days", not "longer
// than max_age").
func aboutPolicy(about string, p store.Policy) string {
	return strings.NewReplacer(string(store.ParamMaxAge), humanize.Duration(p.MaxAge),
		string(store.ParamKeepLast), fmtNum(p.KeepLast), string(store.ParamMaxBytes), fmtBytes(p.MaxBytes)).Replace(about)
}

// retentionSweeps is how many sweeps of the log the page shows.
const retentionSweeps = 20

func (c *console) retentionPage(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	ret := c.st.Retention()
	p := &retentionPage{Policies: []retentionPolicy{}, Kinds: store.PolicyKinds()}
	policies, err := ret.Policies(ctx)
	if err != nil {
		return err
	}
	for _, pol := range policies {
		k, _ := store.KindInfo(pol.Kind)
		p.Policies = append(p.Policies, retentionPolicy{Policy: pol, Facet: k.Facet, About: aboutPolicy(k.About, pol)})
	}
	if p.Holds, err = ret.Holds(ctx); err != nil {
		return err
	}
	if p.Sweeps, err = ret.Sweeps(ctx, retentionSweeps); err != nil {
		return err
	}
	if p.Next, err = ret.Sweep(ctx, store.SweepOptions{DryRun: true}); err != nil {
		return err
	}
	c.render(w, r, http.StatusOK, "retention", "Retention", "retention", p)
	return nil
}
