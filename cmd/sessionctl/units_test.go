package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestUnitsInJSONAndTables: durations, money and times read as people
// write them and as the README promises JSON: governed time limits and
// rate windows in *_ms and "1 h", "2 per 1 min"; spend limits and the
// audit trail's details as exact decimals with their currency, never
// micro-units; a lifetime window without the Unix epoch as its start.
func TestUnitsInJSONAndTables(t *testing.T) {
	e := newTestEnv(t)
	e.run("create", "--id", "s1", "--agent", "a", "--tool", "x", "--budget", "5", "--rate-limit", "2", "--rate-window", "1m").want(t, 0)
	e.run("limits", "a", "--limit", "cost=1USD").want(t, 0)
	e.run("reserve", "s1", "--cost", "0.75USD", "--request-id", "r1").want(t, 0)
	e.run("reserve", "s1", "--cost", "0.5USD", "--request-id", "r2").want(t, exitSpend)

	show := e.run("show", "s1").want(t, 0).stdout
	for _, want := range []string{"time limit   1 h\n", "2 calls per 1 min (", "agent cost  0.00 USD spent, 0.75 USD reserved of 1.00 USD (0.25 USD left)  lifetime\n"} {
		if !strings.Contains(show, want) {
			t.Errorf("show does not say %q:\n%s", want, show)
		}
	}
	if list := e.run("list").want(t, 0).stdout; !strings.Contains(list, " 2 per 1 min ") {
		t.Errorf("list: the rate is not \"2 per 1 min\":\n%s", list)
	}

	var lim struct {
		Limits []map[string]any `json:"limits"`
	}
	out := e.run("limits", "a", "--json").want(t, 0).stdout
	if err := json.Unmarshal([]byte(out), &lim); err != nil {
		t.Fatal(err)
	}
	if len(lim.Limits) != 1 || lim.Limits[0]["limit"] != "1.00 USD" || lim.Limits[0]["reserved"] != "0.75 USD" || lim.Limits[0]["remaining"] != "0.25 USD" {
		t.Errorf("limits --json: %s", out)
	}
	if strings.Contains(out, "1970-01-01") || strings.Contains(out, "window_start") {
		t.Errorf("limits --json: a lifetime window has a start:\n%s", out)
	}

	var audit struct {
		Events []struct {
			Outcome string         `json:"outcome"`
			Kind    string         `json:"kind"`
			Detail  map[string]any `json:"detail"`
		} `json:"events"`
	}
	out = e.run("audit", "--json").want(t, 0).stdout
	if err := json.Unmarshal([]byte(out), &audit); err != nil {
		t.Fatal(err)
	}
	refused, limits := false, false
	for _, ev := range audit.Events {
		switch {
		case ev.Outcome == "spend_limit_exceeded":
			refused = true
			d := ev.Detail
			if d["limit"] != "1.00 USD" || d["reserved"] != "0.75 USD" || d["requested"] != "0.50 USD" || d["spent"] != "0.00 USD" {
				t.Errorf("the refusal's detail: %v", d)
			}
			if _, ok := d["window_start"]; ok {
				t.Errorf("the refusal's lifetime window has a start: %v", d)
			}
		case ev.Kind == "limits":
			limits = true
			if l, _ := ev.Detail["limits"].([]any); len(l) != 1 || l[0].(map[string]any)["limit"] != "1.00 USD" {
				t.Errorf("the limits event's detail: %v", ev.Detail)
			}
		case ev.Kind == "reserve" && ev.Outcome == "ok":
			if a, _ := ev.Detail["amount"].(map[string]any); a["cost"] != "0.75 USD" || a["cost_micros"] != nil {
				t.Errorf("the reservation's detail: %v", ev.Detail)
			}
			if s, _ := ev.Detail["expires_at"].(string); !strings.HasSuffix(s, "Z") {
				t.Errorf("the reservation's expiry is not RFC 3339 UTC: %v", ev.Detail)
			}
		}
	}
	if !refused || !limits {
		t.Fatalf("audit --json lacks the refusal or the limits event:\n%s", out)
	}
	if strings.Contains(out, "1000000") || strings.Contains(out, "1970-01-01") {
		t.Errorf("audit --json shows micro-units or the epoch:\n%s", out)
	}
}
