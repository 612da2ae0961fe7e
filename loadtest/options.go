package loadtest

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// Defaults of the zero Options.
const (
	DefaultDuration     = 2 * time.Second
	DefaultCallers      = 32
	DefaultSchemaPrefix = "loadtest_"
)

// maxSchemaPrefix leaves room in PostgreSQL's 63-byte names for the
// scenario number and the random suffix.
const maxSchemaPrefix = 40

// Options configure Run. The zero value runs every scenario on SQLite in
// the system's temporary directory for DefaultDuration each.
type Options struct {
	// Dir is the directory whose disk is measured. The fsync probe's file
	// and, on SQLite, each scenario's database live in a temporary
	// directory created inside it and removed at the end. Empty means
	// os.TempDir(). With PostgreSQL, F is meaningful when the server's
	// data is on this disk.
	Dir string
	// PostgresURL, when set (a postgres:// URL or a key=value connection
	// string), runs the scenarios on PostgreSQL: each in a schema of its
	// own of that database, created before it and dropped after it.
	// Empty means SQLite.
	PostgresURL string
	// SchemaPrefix starts the names of those schemas (followed by the
	// scenario's number and a random suffix), so that an operator can
	// recognise them. Lower-case letters, digits and underscores, at most
	// 40 bytes; empty means DefaultSchemaPrefix.
	SchemaPrefix string
	// Duration is how long each scenario, and the fsync probe, runs.
	// Zero means DefaultDuration.
	Duration time.Duration
	// Callers is the number of concurrent callers of the scenarios whose
	// Callers is 0 (the contended ones). Zero means DefaultCallers.
	Callers int
	// Synchronous is the durability level: sqlstore.SyncFull (the
	// default when empty) or sqlstore.SyncNormal. On PostgreSQL FULL is
	// synchronous_commit=on and NORMAL is off.
	Synchronous sqlstore.Synchronous
	// Scenarios are run in order; empty means Scenarios(). Select picks
	// some by name.
	Scenarios []Scenario
	// Progress, when set, is told which step runs ("fsync probe", then
	// "NAME/callers=N" per scenario) and the fraction of it done, from
	// one goroutine at a time; ("", 1) says the run is over.
	Progress func(step string, frac float64)
}

// withDefaults checks o and fills in its defaults. Any error matches
// store.ErrInvalidInput.
func (o Options) withDefaults() (Options, error) {
	if o.Duration < 0 {
		return o, store.Invalid("duration", "must not be negative")
	}
	if o.Duration == 0 {
		o.Duration = DefaultDuration
	}
	if o.Callers < 0 {
		return o, store.Invalid("callers", "must not be negative")
	}
	if o.Callers == 0 {
		o.Callers = DefaultCallers
	}
	switch o.Synchronous {
	case "":
		o.Synchronous = sqlstore.SyncFull
	case sqlstore.SyncFull, sqlstore.SyncNormal:
	default:
		return o, store.Invalid("synchronous", "must be FULL or NORMAL")
	}
	if o.Dir == "" {
		o.Dir = os.TempDir()
	}
	if fi, err := os.Stat(o.Dir); err != nil || !fi.IsDir() {
		return o, store.Invalid("dir", "not a directory")
	}
	if o.PostgresURL != "" {
		if _, err := pgxpool.ParseConfig(o.PostgresURL); err != nil {
			// pgx redacts passwords in its parse errors.
			return o, fmt.Errorf("%w: %w", store.Invalid("postgres url", "not a valid PostgreSQL connection string"), err)
		}
	}
	if o.SchemaPrefix == "" {
		o.SchemaPrefix = DefaultSchemaPrefix
	}
	if err := validSchemaPrefix(o.SchemaPrefix); err != nil {
		return o, err
	}
	if len(o.Scenarios) == 0 {
		o.Scenarios = Scenarios()
	}
	for _, sc := range o.Scenarios {
		if sc.Name == "" || sc.Setup == nil || sc.Callers < 0 {
			return o, store.Invalid("scenario", "needs a name, a setup and a caller count that is not negative")
		}
	}
	return o, nil
}

// validSchemaPrefix checks Options.SchemaPrefix: the schema names it
// starts must be plain lower-case identifiers.
func validSchemaPrefix(p string) error {
	if len(p) > maxSchemaPrefix {
		return store.Invalid("schema prefix", "too long")
	}
	if p[0] >= '0' && p[0] <= '9' {
		return store.Invalid("schema prefix", "must not start with a digit")
	}
	if strings.HasPrefix(p, "pg_") {
		return store.Invalid("schema prefix", "reserved prefix")
	}
	for _, r := range p {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return store.Invalid("schema prefix", "only lower-case letters, digits and underscores")
		}
	}
	return nil
}
