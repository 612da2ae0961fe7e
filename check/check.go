// Package check holds the checks of a session store that do not depend on
// its backend: the schema version against this binary, the tables of every
// facet of the registry, the decoding of every stored document and the
// audit chains. A backend's package runs them together with its own
// checks (sqlstore.Check, pgstore.Check) and returns a Report; sessionctl
// doctor prints it.
//
// The checks change nothing. A result's detail is one line of text for
// people, with stored data in it escaped.
package check

import (
	"fmt"

	"github.com/agentstore/sessionstore/humanize"
)

// Status is the outcome of one check.
type Status string

// The outcomes of a check: a failed check makes the report fail; a
// warning does not.
const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
)

// Result is one check: its name ("integrity", "schema", "documents", ...),
// outcome and a one-line detail.
type Result struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
}

// Report holds the results of the checks, in the order they ran. A check
// that makes the next ones meaningless ends the list.
type Report struct {
	Results []Result
}

// Failed reports whether any check failed.
func (r Report) Failed() bool {
	for _, c := range r.Results {
		if c.Status == Fail {
			return true
		}
	}
	return false
}

// Add appends a result whose detail is format with args, on one line.
func (r *Report) Add(name string, status Status, format string, args ...any) {
	r.Results = append(r.Results, Result{Name: name, Status: status, Detail: humanize.OneLine(fmt.Sprintf(format, args...))})
}

// Options choose how thorough the checks are.
type Options struct {
	// Quick runs the cheaper form of the slow checks: SQLite's quick_check
	// instead of integrity_check; on PostgreSQL, no scan for rows whose
	// parent row is missing.
	Quick bool
}
