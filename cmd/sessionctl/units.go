package main

// The CLI's views of the store's values that carry a unit: durations,
// money and times go through package humanize, the one rendering every
// surface (the CLI's tables and JSON, the console's pages, its JSON and
// /metrics) shares. The store's own JSON (export files) is left as it is.

import (
	"time"

	"github.com/agentstore/sessionstore/internal/humanize"
	"github.com/agentstore/sessionstore/store"
)

// policyView is the JSON shape of a retention policy: its age in whole
// milliseconds (max_age_ms), where store.Policy's own JSON (the export
// format) carries Go nanoseconds.
type policyView struct {
	Kind       store.PolicyKind `json:"kind"`
	MaxAgeMS   *int64           `json:"max_age_ms,omitempty"`
	KeepLast   int64            `json:"keep_last,omitempty"`
	MaxBytes   int64            `json:"max_bytes,omitempty"`
	ReadsCount bool             `json:"reads_count,omitempty"`
	UpdatedAt  string           `json:"updated_at,omitempty"`
}

func newPolicyView(p store.Policy) policyView {
	v := policyView{Kind: p.Kind, KeepLast: p.KeepLast, MaxBytes: p.MaxBytes, ReadsCount: p.ReadsCount, UpdatedAt: humanize.Time(p.UpdatedAt)}
	if k, _ := store.KindInfo(p.Kind); k.Param == store.ParamMaxAge {
		ms := humanize.Millis(p.MaxAge)
		v.MaxAgeMS = &ms
	}
	return v
}

func policyViews(ps []store.Policy) []policyView {
	out := make([]policyView, len(ps))
	for i, p := range ps {
		out[i] = newPolicyView(p)
	}
	return out
}

// durationText is a configured duration as people write it ("1 min",
// "30 days").
func durationText(d time.Duration) string { return humanize.Duration(d) }
