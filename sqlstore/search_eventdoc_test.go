package sqlstore

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/internal/searchtext"
	"github.com/agentstore/sessionstore/internal/sqlcore"
)

// eventDocCases are agent events' stored JSON of every shape the search
// document's extraction meets, and some it should never meet.
func eventDocCases() []string {
	cases := []string{
		// The adapter's runner events, and a compact one.
		string(runnerEventJSON(0)), string(runnerEventJSON(1)), string(runnerEventJSON(2)), string(runnerEventJSON(3)),
		`{"author":"user","content":{"role":"user","parts":[{"text":"hello"}]}}`,
		// Escapes in text, names and arguments.
		`{"author":"a\"b\\c\/d","content":{"parts":[{"text":"line\nbreak\ttab \u00e9t\u00E9 \u65e5\u672c \"q\" \b\f\r"}]}}`,
		`{"content":{"parts":[{"text":"\ud83d\ude00 surrogate pair"}]}}`,
		`{"content":{"parts":[{"text":"lone \ud83d"}]}}`,
		`{"content":{"parts":[{"text":"nul \u0000 here"}]}}`,
		`{"content":{"parts":[{"functionCall":{"name":"run","args":{"cmd":"a \u003c b \u003e c \u0026 d","x":"\\u003c","y":"\u003C"}}}]}}`,
		`{"content":{"parts":[{"functionCall":{"name":"run","args":"a \u003c b \\u0026"}}]}}`,
		`{"content":{"parts":[{"functionCall":{"name":"f","args":[1, 2.50, -0, 1E5, 1e-7, 123456789012345678901234567890, true, false, null, "s", {"k" : [ ] }]}}]}}`,
		"{\n  \"author\" : \"pretty\" ,\n  \"content\" : {\n    \"parts\" : [ { \"functionCall\" : { \"name\" : \"g\" , \"args\" : { \"a\" : [ 1 , 2 ] ,\t\"b\" : { } } } } ]\n  }\n}\n",
		`{"content":{"parts":[{"functionCall":{"name":"f","args":7}}]}}`,
		`{"content":{"parts":[{"functionCall":{"name":"f","args":true}}]}}`,
		`{"content":{"parts":[{"functionCall":{"name":"f","args":null}}]}}`,
		`{"content":{"parts":[{"functionCall":{"name":null}},{"functionCall":"not an object"},{"functionCall":["n"]}]}}`,
		`{"content":{"parts":[{"functionResponse":{"name":"get","response":{"x":1}}},{"functionResponse":{"response":{}}},{"functionResponse":7}]}}`,
		// Parts that are not objects, empty, or several fields at once.
		`{"content":{"parts":["text", 3, null, true, [{"text":"nested"}], {"text":"kept"}]}}`,
		`{"content":{"parts":[{"text":""},{"text":"","functionCall":{"name":"f"}},{},{"thought":true},{"text":"a","functionCall":{"name":"b","args":{}},"functionResponse":{"name":"c"}}]}}`,
		`{"content":{"parts":[]}}`,
		`{"content":{"parts":{"a":{"text":"member"}}}}`,
		`{"content":{"parts":"just a string"}}`,
		`{"content":{"parts":null}}`,
		`{"content":{"role":"model"}}`,
		`{"content":null,"author":"x"}`,
		`{"content":[{"parts":[{"text":"no"}]}]}`,
		`{"content":"text"}`,
		// Kinds where a string is expected.
		`{"content":{"parts":[{"text":12.50}]}}`,
		`{"content":{"parts":[{"text":12}]}}`,
		`{"content":{"parts":[{"text":false}]}}`,
		`{"content":{"parts":[{"text":{"a":1}}]}}`,
		`{"content":{"parts":[{"text":null,"functionCall":{"name":"only"}}]}}`,
		// Roles.
		`{"author":null,"content":{"role":"model","parts":[]}}`,
		`{"content":{"role":"model"}}`,
		`{"author":7,"content":{"role":"model"}}`,
		`{"author":{"n":1}}`,
		`{"author":"","content":{"role":"model"}}`,
		`{"content":{"role":null}}`,
		`{"content":{"role":3}}`,
		// Duplicate keys, and keys with escapes.
		`{"author":"first","author":"second","content":{"parts":[{"text":"one","text":"two"}]},"content":{"parts":[{"text":"three"}]}}`,
		`{"auth\u006fr":"escaped","content":{"parts":[{"te\u0078t":"escaped key"}]}}`,
		`{"content":{"parts":[{"text":"x","functionCall":{"na\u006de":"y"}}]}}`,
		// Roots that are not objects.
		`[{"author":"a"}]`, `"string"`, `42`, `null`, `true`, `[]`, `{}`,
		// Not strict JSON.
		``, ` `, `{`, `{"author":"a",}`, `{author:"a"}`, `{'author':'a'}`, `{"author":"a"} x`,
		"{\"author\":\"raw\ttab\"}", "{\"author\":\"raw\nline\"}", "\ufeff{\"author\":\"bom\"}",
		"{\"author\":\"bad utf8 \xff\xfe\"}", `{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":+1}`, `{"a":NaN}`, `{"a":"\x"}`,
		`{"a":"\u12"}`, "{\"author\":\"x\"}\x00", "\f{\"author\":\"ff\"}", `{"author":"a"}/* c */`,
		strings.Repeat("[", 70) + strings.Repeat("]", 70),
		`{"content":{"parts":[{"text":"deep","functionCall":{"name":"d","args":` + strings.Repeat(`{"a":`, 40) + `1` + strings.Repeat(`}`, 40) + `}}]}}`,
		// Raw multi-byte text.
		`{"author":"模型","content":{"parts":[{"text":"東京の天気 🌧 naïve café"}]}}`,
	}
	// Random events of the same pieces.
	rng := rand.New(rand.NewPCG(11, 12))
	strs := []string{`"plain"`, `""`, `"a \u003c b"`, `"q\"uote"`, `"tab\t"`, `"é\u00e9"`, `null`, `3`, `"\\u0026"`, `"日本"`}
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	part := func() string {
		var f []string
		if rng.IntN(2) == 0 {
			f = append(f, `"text":`+pick(strs))
		}
		if rng.IntN(3) == 0 {
			args := pick([]string{`{"x":` + pick(strs) + `}`, `[` + pick(strs) + `, {"y" : ` + pick(strs) + `}]`, pick(strs), `{ }`})
			f = append(f, `"functionCall":{"name":`+pick(strs)+`,"args":`+args+`}`)
		}
		if rng.IntN(4) == 0 {
			f = append(f, `"functionResponse":{"name":`+pick(strs)+`,"response":{"r":1}}`)
		}
		if rng.IntN(5) == 0 {
			f = append(f, `"thought":true`)
		}
		rng.Shuffle(len(f), func(i, j int) { f[i], f[j] = f[j], f[i] })
		if rng.IntN(8) == 0 {
			return pick(strs)
		}
		return "{" + strings.Join(f, ",") + "}"
	}
	for range 300 {
		var parts []string
		for range rng.IntN(4) {
			parts = append(parts, part())
		}
		ev := fmt.Sprintf(`{"id":"e","author":%s,"content":{"role":%s,"parts":[%s]},"actions":{"stateDelta":{}}}`,
			pick(strs), pick(strs), strings.Join(parts, ", "))
		if rng.IntN(10) == 0 {
			ev = strings.ReplaceAll(ev, ",", " ,\n ")
		}
		cases = append(cases, ev)
	}
	return cases
}

// TestEventDocMatchesSQL pins that the search document of an agent event
// computed in Go (searchtext.EventDoc, the fold's functions) is the one
// SQLite's JSON functions compute (sqlcore.EventRoleSQL, EventTextSQL),
// byte for byte, on every event where it answers, and that the fold's
// expression (the function, else the SQL) equals the SQL on every event.
// It also pins that the Go code does answer for the usual events (so
// that the fold takes the fast path).
func TestEventDocMatchesSQL(t *testing.T) {
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q := `SELECT ` + sqlcore.EventRoleSQL("?1") + `, ` + sqlcore.EventTextSQL("?1") + `,
		coalesce(` + sqlcore.EventRoleFunc + `(?1), ` + sqlcore.EventRoleSQL("?1") + `),
		coalesce(` + sqlcore.EventTextFunc + `(?1), ` + sqlcore.EventTextSQL("?1") + `)`
	answered := 0
	for i, data := range eventDocCases() {
		var sqlRole, sqlText, foldRole, foldText string
		if err := db.QueryRow(q, data).Scan(&sqlRole, &sqlText, &foldRole, &foldText); err != nil {
			t.Fatalf("case %d %q: %v", i, data, err)
		}
		if foldRole != sqlRole || foldText != sqlText {
			t.Errorf("case %d %q: fold (%q, %q), SQL (%q, %q)", i, data, foldRole, foldText, sqlRole, sqlText)
		}
		role, text, ok := searchtext.EventDoc(data)
		if !ok {
			continue
		}
		answered++
		if role != sqlRole || text != sqlText {
			t.Errorf("case %d %q: Go (%q, %q), SQL (%q, %q)", i, data, role, text, sqlRole, sqlText)
		}
	}
	for i := range 4 {
		if _, _, ok := searchtext.EventDoc(string(runnerEventJSON(i))); !ok {
			t.Errorf("runner event %d: EventDoc does not answer", i)
		}
	}
	if answered < 250 {
		t.Errorf("EventDoc answered %d cases", answered)
	}
}
