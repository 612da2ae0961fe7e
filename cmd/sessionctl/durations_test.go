package main

import (
	"flag"
	"fmt"
	"strings"
	"testing"
)

// TestDurationsAsPeopleTypeThem: every duration the CLI reads takes days
// and weeks ("30d", "2w") as well as Go's forms, a negative or malformed
// one is a usage error that says how a duration is written, and no
// command defines a duration flag that reads Go's syntax only.
func TestDurationsAsPeopleTypeThem(t *testing.T) {
	e := newTestEnv(t)
	e.convFixture()
	days := e.run("gc", "--older-than", "30d", "--dry-run", "--json").want(t, 0).stdout
	hours := e.run("gc", "--older-than", "720h", "--dry-run", "--json").want(t, 0).stdout
	if days != hours || !strings.Contains(days, `"deleted_conversations": 1`) {
		t.Errorf("gc --older-than 30d:\n%s\nwant what 720h gives:\n%s", days, hours)
	}
	for value, want := range map[string]string{"30d": "after 30 days", "2w": "after 14 days", "1d12h": "after 1 day 12 h", "720h": "after 30 days"} {
		if r := e.run("retention", "set", "conversations_idle", value).want(t, 0); r.stdout != "set conversations_idle: "+want+"\n" {
			t.Errorf("retention set conversations_idle %s: %q, want %q", value, r.stdout, want)
		}
	}
	r := e.run("create", "--id", "s", "--agent", "a", "--budget", "1", "--time-limit", "1d", "--rate-limit", "1", "--rate-window", "1 min", "--json").want(t, 0)
	if !strings.Contains(r.stdout, `"time_limit_ms": 86400000`) || !strings.Contains(r.stdout, `"rate_window_ms": 60000`) {
		t.Errorf("create --time-limit 1d --rate-window '1 min': %s", r.stdout)
	}
	e.run("gc", "--older-than", "-5d").want(t, exitUsage).oneLineErr(t, `invalid value "-5d" for flag --older-than: a negative duration is refused (give a duration such as 30d or 12h)`)
	e.run("gc", "--older-than", "5x").want(t, exitUsage).oneLineErr(t, `invalid value "5x" for flag --older-than: unknown unit "x" (give a duration such as 30d or 12h)`)
	e.run("reserve", "s", "--input-tokens", "1", "--ttl", "5").want(t, exitUsage).oneLineErr(t, "the number 5 has no unit")
	e.run("retention", "set", "conversations_idle", "5x").want(t, exitUsage).oneLineErr(t, `"5x" is not a duration such as 30d or 12h`)

	for _, c := range commands() {
		d := describe(c)
		if d.Flags == nil {
			continue
		}
		d.Flags.VisitAll(func(f *flag.Flag) {
			if typ := fmt.Sprintf("%T", f.Value); typ == "*flag.durationValue" {
				t.Errorf("%s --%s reads Go's durations only (define it with durationFlag)", c.name, f.Name)
			}
		})
	}
}
