package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"path"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentstore/sessionstore/humanize"
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
		"ts":     timeElement,
		"utc":    fmtTime,
		"ago":    func(t time.Time) string { return fmtAgo(c.now(), t) },
		"dur":    humanize.Duration,
		"bytes":  fmtBytes,
		"usd":    func(v float64) string { return humanize.Money(humanize.MicrosOf(v), "USD") },
		"trunc":  truncate,
		"long":   func(s string) bool { return len(s) > truncateAt },
		"pretty": prettyJSON,
		"num":    fmtNum,
		"count":  fmtCount,
		"money":  humanize.Money,
		"text":   func(raw json.RawMessage) string { return string(humanize.AuditDetail(raw)) },
		"echo":   echo,
		// pendingNote says that a search could not be exact
		// (store.SearchResult.Pending).
		"pendingNote": store.PendingNote,
	}
}

// echo is the user's input (an id asked for) as a page shows it back:
// cut to humanize.EchoMax characters, its whole length stated.
func echo(s string) string { return humanize.Clip(s, humanize.EchoMax) }

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000Z")
}

// timeElement writes t for a page: a <time> element with the instant in
// RFC 3339 UTC (datetime) and in UTC as text and on hover (title); the
// console's script shows the text in the reader's local time zone. The
// zero time is absent: "—".
func timeElement(t time.Time) template.HTML {
	if t.IsZero() {
		return "—"
	}
	utc := template.HTMLEscapeString(fmtTime(t))
	return template.HTML(`<time datetime="` + template.HTMLEscapeString(humanize.Time(t)) + `" title="` + utc + `">` + utc + `</time>`)
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

// fmtDur writes an age or a time left for people: "59 min 59 s", "2 days
// 3 h" (humanize.Approx).
func fmtDur(d time.Duration) string { return humanize.Approx(d) }

func fmtBytes(n int64) string { return humanize.Bytes(n) }

// fmtCount writes a count with its noun, singular for one: "1 agent
// alias", "1,500 tokens". n is any integer.
func fmtCount(n any, one, many string) string {
	var v int64
	switch rv := reflect.ValueOf(n); {
	case rv.CanInt():
		v = rv.Int()
	case rv.CanUint():
		v = int64(rv.Uint())
	default:
		return fmt.Sprint(n) + " " + many
	}
	return fmtNum(v) + " " + humanize.Plural(v, one, many)
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

// prettyJSON indents a JSON document, its HTML escapes written as the
// characters they stand for; anything else is returned as is.
func prettyJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "", "  ") != nil {
		return string(raw)
	}
	return string(humanize.JSONChars(buf.Bytes())) // <b>, not \u003cb\u003e: the page escapes it
}

// execute runs the template name of t and returns the HTML with every
// control character of the text it holds made visible (escapeControls).
// Every page, and every fragment a live page receives, is made here:
// html/template escapes markup, not control characters, and a stored ESC
// or BEL would otherwise reach the browser (and whoever copies the text
// from it) as it is.
func execute(t *template.Template, name string, data any) ([]byte, error) {
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, data); err != nil {
		return nil, err
	}
	return escapeControls(buf.Bytes()), nil
}

// escapeControls returns html with every unsafe rune (humanize.UnsafeRune:
// the C0 controls, DEL, the C1 controls and the bidirectional formatting
// characters; tab, newline and carriage return lay text out and are kept)
// written as in a Go string literal (\x1b, \u009b, \u202e) and every byte
// that is not UTF-8 as \xNN, as sessionctl prints them. The templates hold
// none of these, so only the store's text changes; the JSON twins need no
// such step (encoding/json escapes the controls itself).
func escapeControls(html []byte) []byte {
	unsafe := func(r rune) bool { return r != '\t' && r != '\n' && r != '\r' && humanize.UnsafeRune(r) }
	if !bytes.ContainsFunc(html, unsafe) && utf8.Valid(html) {
		return html
	}
	out, _ := humanize.AppendEscape(make([]byte, 0, len(html)+64), html, "\t\n\r", false)
	return out
}
