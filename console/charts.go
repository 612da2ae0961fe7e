package console

// Charts are inline SVG drawn here, on the server: no chart library runs in
// the browser. Every chart has a <title> and a <desc> that states its data
// as text (the text alternative), labelled axes with units, and takes its
// colours from classes in console.css (the CSP forbids inline styles).
// Every piece of text goes through esc: labels can be agent-written.

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
)

func esc(s string) string { return html.EscapeString(s) }

// chart geometry
const (
	chartW   = 640
	chartH   = 240
	padLeft  = 64
	padRight = 16
	padTop   = 24
	padBot   = 48
)

// point is one sample of a line chart.
type point struct {
	T time.Time
	V float64
}

// lineChart draws points (in time order) as a step or straight line over
// a time axis. yMax of 0 scales to the data.
func lineChart(id, title, yUnit string, pts []point, yMax float64, step bool, desc string) template.HTML {
	var b strings.Builder
	fmt.Fprintf(&b, `<figure class="chart"><svg id="%s" class="chart-svg" viewBox="0 0 %d %d" role="img" aria-labelledby="%s-t %s-d" xmlns="http://www.w3.org/2000/svg">`,
		esc(id), chartW, chartH, esc(id), esc(id))
	fmt.Fprintf(&b, `<title id="%s-t">%s</title><desc id="%s-d">%s</desc>`, esc(id), esc(title), esc(id), esc(desc))
	if len(pts) == 0 {
		fmt.Fprintf(&b, `<text class="axis-label" x="%d" y="%d">no data</text></svg></figure>`, chartW/2-30, chartH/2)
		return template.HTML(b.String())
	}
	t0, t1 := pts[0].T, pts[len(pts)-1].T
	if !t1.After(t0) {
		t1 = t0.Add(time.Second)
	}
	whole := yMax == math.Trunc(yMax)
	for _, p := range pts {
		whole = whole && p.V == math.Trunc(p.V)
	}
	switch {
	case yMax > 0 && whole:
		// A given top (a budget) stays the top, raised to a multiple
		// of the steps so that every tick is whole (a budget of 3: 0,
		// 1, 2, 3, 4, not 0.75 and 2.25).
		yMax = math.Ceil(yMax/axisTicks) * axisTicks
	case yMax <= 0:
		for _, p := range pts {
			yMax = math.Max(yMax, p.V)
		}
		if yMax <= 0 {
			yMax = 1
		}
		if whole {
			yMax = wholeScale(yMax)
		}
	}
	plotW, plotH := float64(chartW-padLeft-padRight), float64(chartH-padTop-padBot)
	x := func(t time.Time) float64 { return padLeft + plotW*float64(t.Sub(t0))/float64(t1.Sub(t0)) }
	y := func(v float64) float64 { return padTop + plotH*(1-v/yMax) }
	axes(&b, yMax, yUnit, "time (UTC)", fmtAxisTime(t0, t1), fmtAxisTime(t1, t0))
	var path strings.Builder
	for i, p := range pts {
		switch {
		case i == 0:
			fmt.Fprintf(&path, "M%.1f %.1f", x(p.T), y(p.V))
		case step:
			fmt.Fprintf(&path, " H%.1f V%.1f", x(p.T), y(p.V))
		default:
			fmt.Fprintf(&path, " L%.1f %.1f", x(p.T), y(p.V))
		}
	}
	fmt.Fprintf(&b, `<path class="series" d="%s"/>`, path.String())
	for _, p := range pts {
		fmt.Fprintf(&b, `<circle class="dot" cx="%.1f" cy="%.1f" r="3"><title>%s: %s %s</title></circle>`,
			x(p.T), y(p.V), esc(fmtTime(p.T)), esc(fmtValue(p.V)), esc(unitOf(p.V, yUnit)))
	}
	b.WriteString(`</svg><figcaption>` + esc(desc) + `</figcaption></figure>`)
	return template.HTML(b.String())
}

// axes draws both axes with the y range, the units and the x end labels.
func axes(b *strings.Builder, yMax float64, yUnit, xUnit, xFirst, xLast string) {
	x0, y0, x1, y1 := padLeft, chartH-padBot, chartW-padRight, padTop
	fmt.Fprintf(b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>`, x0, y0, x1, y0)
	fmt.Fprintf(b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>`, x0, y0, x0, y1)
	for i := 0; i <= axisTicks; i++ {
		v := yMax * float64(i) / axisTicks
		yy := float64(y0) - float64(y0-y1)*float64(i)/axisTicks
		fmt.Fprintf(b, `<line class="grid" x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`, x0, yy, x1, yy)
		fmt.Fprintf(b, `<text class="tick" x="%d" y="%.1f" text-anchor="end">%s</text>`, x0-6, yy+4, esc(fmtValue(v)))
	}
	fmt.Fprintf(b, `<text class="axis-label" x="12" y="%d" transform="rotate(-90 12 %d)" text-anchor="middle">%s</text>`,
		(y0+y1)/2, (y0+y1)/2, esc(yUnit))
	fmt.Fprintf(b, `<text class="tick" x="%d" y="%d">%s</text>`, x0, y0+16, esc(xFirst))
	fmt.Fprintf(b, `<text class="tick" x="%d" y="%d" text-anchor="end">%s</text>`, x1, y0+16, esc(xLast))
	fmt.Fprintf(b, `<text class="axis-label" x="%d" y="%d" text-anchor="middle">%s</text>`, (x0+x1)/2, chartH-8, esc(xUnit))
}

// axisTicks is how many steps the y axis has between 0 and its top.
const axisTicks = 4

// wholeScale is the top of a y axis for whole numbers up to yMax: the
// smallest axisTicks times a step of 1, 2 or 5 times a power of ten that
// reaches yMax, so that every tick is a whole, round number (0, 5, 10,
// 15, 20), never 7.75 or 17767.50.
func wholeScale(yMax float64) float64 {
	need := yMax / axisTicks
	for p := 1.0; ; p *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if step := m * p; step >= need {
				return step * axisTicks
			}
		}
	}
}

// fmtAxisTime labels a time axis end: the date when the span is days long.
func fmtAxisTime(t, other time.Time) string {
	if d := t.Sub(other); d > 24*time.Hour || d < -24*time.Hour {
		return t.UTC().Format("2006-01-02")
	}
	return t.UTC().Format("01-02 15:04:05")
}

func fmtValue(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return fmtNum(int64(v))
	}
	if math.Abs(v) < 1 {
		return fmt.Sprintf("%.4f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// singular holds the singular of each plural word of the charts' units.
var singular = map[string]string{"sessions": "session", "calls": "call", "decisions": "decision", "tokens": "token",
	"milliseconds": "millisecond", "seconds": "second", "dollars": "dollar", "uses": "use"}

// unitOf is unit as it reads after the amount v: the unit as given (its
// plural) unless v is 1, when its first plural word is made singular ("1
// call", "1 call remaining", "1 US dollar", not "1 calls").
func unitOf(v float64, unit string) string {
	if v != 1 {
		return unit
	}
	words := strings.Fields(unit)
	for i, w := range words {
		if one, ok := singular[w]; ok {
			words[i] = one
			return strings.Join(words, " ")
		}
	}
	return unit
}

// bar is one bar of a bar chart.
type bar struct {
	Label string
	V     float64
}

// barChart draws horizontal bars, one per label.
func barChart(id, title, unit string, bars []bar) template.HTML {
	var b strings.Builder
	rowH := 26
	h := padTop + len(bars)*rowH + 36
	var parts []string
	maxV := 0.0
	for _, br := range bars {
		maxV = math.Max(maxV, br.V)
		parts = append(parts, fmt.Sprintf("%s: %s %s", br.Label, fmtValue(br.V), unitOf(br.V, unit)))
	}
	desc := title + ". " + strings.Join(parts, "; ") + "."
	if len(bars) == 0 {
		desc = title + ": no data."
	}
	fmt.Fprintf(&b, `<figure class="chart"><svg id="%s" class="chart-svg" viewBox="0 0 %d %d" role="img" aria-labelledby="%s-t %s-d" xmlns="http://www.w3.org/2000/svg">`,
		esc(id), chartW, h, esc(id), esc(id))
	fmt.Fprintf(&b, `<title id="%s-t">%s</title><desc id="%s-d">%s</desc>`, esc(id), esc(title), esc(id), esc(desc))
	labelW := 180
	plotW := float64(chartW - labelW - 90)
	if maxV <= 0 {
		maxV = 1
	}
	for i, br := range bars {
		yy := padTop + i*rowH
		w := plotW * br.V / maxV
		label := br.Label
		if len([]rune(label)) > 26 {
			label = string([]rune(label)[:25]) + "…"
		}
		fmt.Fprintf(&b, `<text class="tick" x="%d" y="%d" text-anchor="end">%s</text>`, labelW-8, yy+17, esc(label))
		fmt.Fprintf(&b, `<rect class="bar bar-%d" x="%d" y="%d" width="%.1f" height="%d"><title>%s</title></rect>`,
			i%6, labelW, yy+4, math.Max(w, 1), rowH-8, esc(parts[i]))
		fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%d">%s</text>`, float64(labelW)+math.Max(w, 1)+6, yy+17, esc(fmtValue(br.V)))
	}
	fmt.Fprintf(&b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>`, labelW, padTop, labelW, padTop+len(bars)*rowH)
	fmt.Fprintf(&b, `<text class="axis-label" x="%d" y="%d" text-anchor="middle">%s</text>`, labelW+int(plotW)/2, h-8, esc(unit))
	b.WriteString(`</svg><figcaption>` + esc(desc) + `</figcaption></figure>`)
	return template.HTML(b.String())
}

// gauge draws one horizontal gauge: value of limit.
func gauge(id, label, unit string, value, limit float64, note string) string {
	frac := 0.0
	if limit > 0 {
		frac = math.Min(1, math.Max(0, value/limit))
	}
	level := "ok"
	switch {
	case frac >= 1:
		level = "full"
	case frac >= 0.8:
		level = "high"
	}
	text := fmt.Sprintf("%s: %s of %s %s (%.0f%%)", label, fmtValue(value), fmtValue(limit), unitOf(limit, unit), frac*100)
	if note != "" {
		text += ", " + note
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="%s" class="gauge" viewBox="0 0 320 44" role="img" aria-labelledby="%s-t" xmlns="http://www.w3.org/2000/svg">`, esc(id), esc(id))
	fmt.Fprintf(&b, `<title id="%s-t">%s</title>`, esc(id), esc(text))
	fmt.Fprintf(&b, `<text class="tick" x="0" y="12">%s</text>`, esc(label+" ("+unit+")"))
	fmt.Fprintf(&b, `<rect class="gauge-track" x="0" y="18" width="320" height="12"/>`)
	fmt.Fprintf(&b, `<rect class="gauge-fill gauge-%s" x="0" y="18" width="%.1f" height="12"/>`, level, 320*frac)
	fmt.Fprintf(&b, `<text class="tick" x="0" y="42">%s</text>`, esc(fmt.Sprintf("%s / %s", fmtValue(value), fmtValue(limit))))
	fmt.Fprintf(&b, `<text class="tick" x="320" y="42" text-anchor="end">%s</text>`, esc(fmt.Sprintf("%.0f%%", frac*100)))
	b.WriteString(`</svg>`)
	return b.String()
}

// governedGauges draws budget, rate window and time limit of a session.
func governedGauges(s store.Session, now time.Time) template.HTML {
	var b strings.Builder
	b.WriteString(`<div class="gauges">`)
	b.WriteString(gauge("g-budget", "Budget", "calls", float64(s.CallsMade), float64(s.CallBudget), ""))
	if s.RateLimit > 0 {
		calls := s.RateWindowCalls
		if !now.Before(s.RateWindowStart.Add(s.RateWindow)) {
			calls = 0
		}
		b.WriteString(gauge("g-rate", "Rate window", "calls per "+humanize.Duration(s.RateWindow), float64(calls), float64(s.RateLimit), ""))
	}
	total := s.ExpiresAt.Sub(s.CreatedAt)
	used := min(max(now.Sub(s.CreatedAt), 0), total)
	b.WriteString(gauge("g-time", "Time limit", "seconds", math.Round(used.Seconds()), math.Round(total.Seconds()), humanize.Approx(total-used)+" left"))
	b.WriteString(`</div>`)
	return template.HTML(b.String())
}

// burnDownChart draws the remaining budget over time from the recorded
// uses (those that carried a request id; calls without one show as a
// drop at the last point, the session as it is now).
func burnDownChart(s store.Session, uses []store.UseRecord, now time.Time) template.HTML {
	pts := []point{{s.CreatedAt, float64(s.CallBudget)}}
	last := int64(0)
	for _, u := range uses {
		if u.Outcome == store.UseOK && u.CallsMade > 0 {
			last = u.CallsMade
			pts = append(pts, point{u.CreatedAt, float64(s.CallBudget - u.CallsMade)})
		}
	}
	end := now
	if s.ExpiresAt.Before(end) {
		end = s.ExpiresAt
	}
	if end.Before(pts[len(pts)-1].T) {
		end = pts[len(pts)-1].T
	}
	if lastPt := pts[len(pts)-1]; end.After(lastPt.T) || lastPt.V != float64(s.RemainingBudget()) {
		pts = append(pts, point{end, float64(s.RemainingBudget())})
	}
	desc := fmt.Sprintf("Remaining budget of %d %s: %d at creation (%s)", s.CallBudget, humanize.Plural(s.CallBudget, "call", "calls"), s.CallBudget, fmtTime(s.CreatedAt))
	for _, p := range pts[1:] {
		desc += fmt.Sprintf(", %s at %s", fmtValue(p.V), fmtTime(p.T))
	}
	desc += "."
	if s.CallsMade != last {
		n := s.CallsMade - last
		desc += fmt.Sprintf(" %d %s no request id: %s only in the last point.", n, humanize.Plural(n, "call carried", "calls carried"), humanize.Plural(n, "it shows", "they show"))
	}
	return lineChart("burndown", "Budget burn-down", "calls remaining", pts, float64(max(s.CallBudget, 1)), true, desc)
}

// traceChart draws the duration of each trace event.
func traceChart(events []store.TraceEvent) template.HTML {
	if len(events) == 0 {
		return ""
	}
	n := min(len(events), 30)
	bars := make([]bar, 0, n)
	for _, e := range events[len(events)-n:] {
		bars = append(bars, bar{fmt.Sprintf("#%d %s", e.Seq, e.Name), float64(e.DurationMS)})
	}
	return barChart("traces", "Duration of "+humanize.Plural(n, "the last trace event", fmt.Sprintf("the last %d trace events", n)), "milliseconds", bars)
}

// stackedDays draws one column per day, stacked by series (in order),
// with a legend.
func stackedDays(id, title, unit string, days []time.Time, order []string, series map[string][]float64) template.HTML {
	var b strings.Builder
	maxV := 0.0
	var parts []string
	for i, d := range days {
		sum := 0.0
		var dp []string
		for _, name := range order {
			v := series[name][i]
			sum += v
			if v > 0 {
				dp = append(dp, fmt.Sprintf("%s %s", fmtValue(v), name))
			}
		}
		maxV = math.Max(maxV, sum)
		if len(dp) > 0 {
			parts = append(parts, d.Format("2006-01-02")+": "+strings.Join(dp, ", "))
		}
	}
	desc := title + ". "
	if len(parts) == 0 {
		desc += "None in the period."
	} else {
		desc += strings.Join(parts, "; ") + "; no other day has any."
	}
	maxV = wholeScale(max(maxV, 1)) // counts: whole ticks
	legend, legendH := legendRows(order)
	fmt.Fprintf(&b, `<figure class="chart"><svg id="%s" class="chart-svg" viewBox="0 0 %d %d" role="img" aria-labelledby="%s-t %s-d" xmlns="http://www.w3.org/2000/svg">`,
		esc(id), chartW, chartH+legendH, esc(id), esc(id))
	fmt.Fprintf(&b, `<title id="%s-t">%s</title><desc id="%s-d">%s</desc>`, esc(id), esc(title), esc(id), esc(desc))
	axes(&b, maxV, unit, "day (UTC)", days[0].Format("01-02"), days[len(days)-1].Format("01-02"))
	plotW, plotH := float64(chartW-padLeft-padRight), float64(chartH-padTop-padBot)
	colW := plotW / float64(len(days))
	for i, d := range days {
		y := float64(chartH - padBot)
		for si, name := range order {
			v := series[name][i]
			if v <= 0 {
				continue
			}
			h := plotH * v / maxV
			y -= h
			fmt.Fprintf(&b, `<rect class="bar bar-%d" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s</title></rect>`,
				si%barColours, padLeft+float64(i)*colW+2, y, colW-4, h, esc(fmt.Sprintf("%s: %s %s %s", d.Format("2006-01-02"), fmtValue(v), name, unitOf(v, unit))))
		}
	}
	for si, name := range order {
		at := legend[si]
		fmt.Fprintf(&b, `<rect class="bar bar-%d" x="%d" y="%d" width="10" height="10"/><text class="tick" x="%d" y="%d">%s</text>`,
			si%barColours, at.x, at.y, at.x+14, at.y+9, esc(name))
	}
	b.WriteString(`</svg><figcaption>` + esc(desc) + `</figcaption></figure>`)
	return template.HTML(b.String())
}

// barColours is the number of series colours (bar-0 ... bar-9 in
// console.css).
const barColours = 10

// legendAt is where one legend entry is drawn.
type legendAt struct{ x, y int }

// legendRows lays the legend of a chart out below it, in rows that wrap
// at the chart's width (by an estimate of the labels' widths), and
// returns each entry's place and the height the rows add to the chart.
func legendRows(names []string) ([]legendAt, int) {
	const rowH, charW = 16, 7
	out := make([]legendAt, len(names))
	x, row := padLeft, 0
	for i, name := range names {
		w := 14 + utf8.RuneCountInString(name)*charW + 16
		if x > padLeft && x+w > chartW-padRight {
			x, row = padLeft, row+1
		}
		out[i] = legendAt{x, chartH + 4 + row*rowH}
		x += w
	}
	if len(names) == 0 {
		return out, 0
	}
	return out, 8 + (row+1)*rowH
}
