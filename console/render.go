package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentstore/sessionstore/store"
)

// truncateAt is the length (bytes) past which a text is cut on a page,
// with a link to the whole of it.
const truncateAt = 4000

// parsePages parses the layout with each page template.
func parsePages(funcs template.FuncMap) (map[string]*template.Template, error) {
	base, err := template.New("layout").Funcs(funcs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("console: templates: %w", err)
	}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	pages := map[string]*template.Template{}
	for _, n := range names {
		name := strings.TrimSuffix(path.Base(n), ".html")
		if name == "layout" {
			continue
		}
		t, err := base.Clone()
		if err != nil {
			return nil, err
		}
		if _, err := t.ParseFS(templateFS, n); err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

func (c *console) funcs() template.FuncMap {
	return template.FuncMap{
		"link":   c.link,
		"export": c.exportLink,
		"static": func(name string) string { return c.prefix + "/static/" + name },
		"ts":     fmtTime,
		"ago":    func(t time.Time) string { return fmtAgo(c.now(), t) },
		"dur":    fmtDur,
		"bytes":  fmtBytes,
		"usd":    func(v float64) string { return fmt.Sprintf("$%.4f", v) },
		"trunc":  truncate,
		"long":   func(s string) bool { return len(s) > truncateAt },
		"pretty": prettyJSON,
		"num":    fmtNum,
		"micros": store.FormatMicros,
		"text":   func(raw json.RawMessage) string { return string(raw) },
	}
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000Z")
}

func fmtAgo(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := now.Sub(t)
	if d < 0 {
		return "in " + fmtDur(-d)
	}
	return fmtDur(d) + " ago"
}

func fmtDur(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	case d < 48*time.Hour:
		return d.Round(time.Second).String()
	default:
		return fmt.Sprintf("%.1fd", d.Hours()/24)
	}
}

func fmtBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func fmtNum(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// truncate cuts s to truncateAt bytes on a rune boundary.
func truncate(s string) string {
	if len(s) <= truncateAt {
		return s
	}
	cut := truncateAt
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// prettyJSON indents a JSON document; anything else is returned as is.
func prettyJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "", "  ") != nil {
		return string(raw)
	}
	return buf.String()
}
