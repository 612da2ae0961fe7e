package console

import "github.com/agentstore/sessionstore/store"

// The console names every outcome of a decision as the audit trail does
// (store.OutcomeAllowed, store.OutcomeBudgetExceeded, ...), on its pages,
// in their JSON twins and in the labels of /metrics: the use records
// (store.UseRecord) name their refusals in short ("budget", "tool", ...),
// and are translated with auditOutcome.

// auditOutcome returns the audit trail's name of a use record's outcome;
// an outcome it does not know is returned as it is.
func auditOutcome(use string) string {
	switch use {
	case store.UseOK:
		return store.OutcomeAllowed
	case store.UseBudget:
		return store.OutcomeBudgetExceeded
	case store.UseTool:
		return store.OutcomeToolDenied
	case store.UseRate:
		return store.OutcomeRateLimited
	case store.UseClosed:
		return store.OutcomeClosed
	case store.UseExpired:
		return store.OutcomeExpired
	}
	return use
}

// auditNamed returns the use records with their outcomes named as the
// audit trail names them.
func auditNamed(recs []store.UseRecord) []store.UseRecord {
	for i := range recs {
		recs[i].Outcome = auditOutcome(recs[i].Outcome)
	}
	return recs
}

// refusalOrder is the order of the refusals in charts and tables.
var refusalOrder = []string{store.OutcomeBudgetExceeded, store.OutcomeToolDenied, store.OutcomeRateLimited,
	store.OutcomeSpendExceeded, store.OutcomeExpired, store.OutcomeClosed, store.OutcomeAgentMismatch, store.OutcomeTooManySessions}
