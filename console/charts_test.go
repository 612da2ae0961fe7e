package console

import (
	"regexp"
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
		"1 call carried no request id",
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

// TestWholeNumberTicks: a chart of whole numbers (tokens, counts) gets
// whole, round ticks, never 7.75 or 17767.50; a chart of money keeps its
// decimals.
func TestWholeNumberTicks(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	tick := regexp.MustCompile(`<text class="tick" x="\d+" y="\d+\.\d" text-anchor="end">([^<]*)</text>`)
	for _, c := range []struct {
		max  float64
		want []string
	}{
		{31, []string{"0", "10", "20", "30", "40"}},
		{71070, []string{"0", "20,000", "40,000", "60,000", "80,000"}},
		{3, []string{"0", "1", "2", "3", "4"}},
		{1, []string{"0", "1", "2", "3", "4"}},
	} {
		out := string(lineChart("l", "T", "tokens", []point{{t0, 0}, {t0.Add(time.Hour), c.max}}, 0, false, "d"))
		var got []string
		for _, m := range tick.FindAllStringSubmatch(out, -1) {
			got = append(got, m[1])
		}
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("max %v: ticks %q, want %q", c.max, got, c.want)
		}
	}
	out := string(lineChart("c", "T", "US dollars", []point{{t0, 0}, {t0.Add(time.Hour), 0.25}}, 0, false, "d"))
	if !strings.Contains(out, ">0.1250<") {
		t.Errorf("a money chart lost its decimal ticks:\n%s", out)
	}
	dec := string(decisionChart(t0.AddDate(0, 0, 1), []store.AuditDayCount{{Day: t0, Kind: store.AuditUse, Outcome: "ok", Count: 31}}))
	for _, m := range tick.FindAllStringSubmatch(dec, -1) {
		if strings.Contains(m[1], ".") {
			t.Errorf("the decision chart has a tick %q", m[1])
		}
	}
}

// TestBurnDownWholeTicks: the burn-down of a budget of whole calls has
// whole ticks up to the budget (a budget of 3 had 0.75 and 2.25).
func TestBurnDownWholeTicks(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	tick := regexp.MustCompile(`<text class="tick" x="\d+" y="\d+\.\d" text-anchor="end">([^<]*)</text>`)
	for budget, want := range map[int64]string{3: "0 1 2 3 4", 100: "0 25 50 75 100", 10: "0 3 6 9 12", 1: "0 1 2 3 4"} {
		s := store.Session{CallBudget: budget, CallsMade: 1, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
		out := string(burnDownChart(s, nil, t0.Add(time.Minute)))
		var got []string
		for _, m := range tick.FindAllStringSubmatch(out, -1) {
			got = append(got, m[1])
		}
		if strings.Join(got, " ") != want {
			t.Errorf("budget %d: ticks %q, want %s", budget, got, want)
		}
	}
}

// TestChartPlurals: a chart's text says "1 call", "1 session", "1
// decision" (it said "1 calls", "active: 1 sessions", "1 budget_exceeded
// decisions", "1 call(s)").
func TestChartPlurals(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	s := store.Session{CallBudget: 1, CallsMade: 1, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	dec := decisionChart(t0.AddDate(0, 0, 1), []store.AuditDayCount{{Day: t0, Kind: store.AuditUse, Outcome: "budget_exceeded", Count: 1}})
	charts := string(barChart("b", "T", "sessions", []bar{{"active", 1}, {"closed", 2}})) +
		string(burnDownChart(s, nil, t0.Add(time.Minute))) + string(dec) +
		gauge("g", "Budget", "calls", 1, 1, "") +
		string(traceChart([]store.TraceEvent{{Seq: 1, Name: "step", DurationMS: 1}})) +
		string(lineChart("l", "T", "calls remaining", []point{{t0, 1}, {t0.Add(time.Hour), 0}}, 1, true, "d"))
	for _, want := range []string{"active: 1 session<", "closed: 2 sessions", "Remaining budget of 1 call:", "1 call carried no request id: it shows",
		"1 budget_exceeded decision<", "Budget: 1 of 1 call ", "Duration of the last trace event", "#1 step: 1 millisecond", "1 call remaining"} {
		if !strings.Contains(charts, want) {
			t.Errorf("no %q in the charts:\n%s", want, charts)
		}
	}
	for _, bad := range []string{" 1 calls", " 1 sessions", " 1 budget_exceeded decisions", "call(s)", "last 1 trace"} {
		if strings.Contains(charts, bad) {
			t.Errorf("%q in the charts", bad)
		}
	}
}
