package console

import (
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

func TestChartsEscapeAndDescribe(t *testing.T) {
	bad := `<script>alert(1)</script>"&`
	out := string(barChart("x", "title "+bad, "unit "+bad, []bar{{Label: bad, V: 3}}))
	if strings.Contains(out, "<script>") || strings.Contains(out, `"&`) {
		t.Errorf("unescaped text in the chart: %s", out)
	}
	for _, want := range []string{`role="img"`, "<title id=\"x-t\">", "<desc id=\"x-d\">", "3 unit &lt;script&gt;"} {
		if !strings.Contains(out, want) {
			t.Errorf("bar chart lacks %q", want)
		}
	}
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	line := string(lineChart("l", "T", "calls", []point{{t0, 1}, {t0.Add(time.Minute), 2}}, 0, false, "desc"))
	for _, want := range []string{"calls", "time (UTC)", "01-02 03:00:00", "01-02 03:01:00", "<path"} {
		if !strings.Contains(line, want) {
			t.Errorf("line chart lacks %q", want)
		}
	}
	if empty := string(lineChart("e", "T", "u", nil, 0, false, "none")); !strings.Contains(empty, "no data") {
		t.Error("an empty chart does not say so")
	}
}

func TestBurnDown(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	s := store.Session{ID: "s", CallBudget: 10, CallsMade: 5, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	uses := []store.UseRecord{
		{Outcome: store.UseOK, CallsMade: 2, CreatedAt: t0.Add(time.Minute)},
		{Outcome: store.UseBudget, CreatedAt: t0.Add(2 * time.Minute)},
		{Outcome: store.UseOK, CallsMade: 4, CreatedAt: t0.Add(3 * time.Minute)},
	}
	out := string(burnDownChart(s, uses, t0.Add(10*time.Minute)))
	for _, want := range []string{
		"10 at creation", "8 at 2026-01-02 03:01:00.000Z", "6 at 2026-01-02 03:03:00.000Z", "5 at 2026-01-02 03:10:00.000Z",
		"1 call(s) carried no request id",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("burn-down lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "<circle") != 4 {
		t.Errorf("burn-down has %d points, want 4", strings.Count(out, "<circle"))
	}
	// The last use is now: no duplicate point.
	s.CallsMade = 4
	out = string(burnDownChart(s, uses, t0.Add(3*time.Minute)))
	if n := strings.Count(out, "<circle"); n != 3 {
		t.Errorf("burn-down ending at the last use has %d points, want 3", n)
	}
}

func TestGaugeLevels(t *testing.T) {
	for _, c := range []struct {
		v, max float64
		class  string
	}{{1, 10, "gauge-ok"}, {8, 10, "gauge-high"}, {10, 10, "gauge-full"}, {0, 0, "gauge-ok"}} {
		if g := gauge("g", "Budget", "calls", c.v, c.max, ""); !strings.Contains(g, c.class) {
			t.Errorf("gauge %v/%v: no %s in %s", c.v, c.max, c.class, g)
		}
	}
}
