package sqlcore

// The lineage statements of conversations (conv_lineage.go,
// conv_branches.go), for the backends' query-plan tests.
func init() {
	for name, q := range map[string]string{
		"convLine":        convLineSQL,
		"msgSpan":         msgSpanSQL,
		"msgSpanDesc":     msgSpanDescSQL,
		"msgSummary":      msgSummarySQL,
		"heldSpan":        heldSpanSQL,
		"heldSpanDesc":    heldSpanDescSQL,
		"heldSummary":     heldSummarySQL,
		"convReaders":     convReadersSQL,
		"convRepoint":     convRepointSQL,
		"retiredRepoint":  retiredRepointSQL,
		"retiredOf":       retiredOfSQL,
		"retiredRuns":     retiredRunsSQL,
		"convChildren":    convChildrenSQL,
		"retiredKids":     retiredKidsSQL,
		"msgRetire":       msgRetireSQL,
		"msgDeleteTail":   msgDeleteTailSQL,
		"msgCompactions":  msgCompactionsSQL,
		"heldCompactions": heldCompactionsSQL,
		// conv_crypt.go: reads of records with the conversation's data key
		"artifactGetKeyed":   artifactGetKeyedSQL,
		"artifactAllKeyed":   artifactAllKeyedSQL,
		"traceRangeKeyed":    traceRangeKeyedSQL,
		"reportAllKeyed":     reportAllKeyedSQL,
		"runGetKeyed":        runGetKeyedSQL,
		"runAllKeyed":        runAllKeyedSQL,
		"feedRunEventsKeyed": feedRunEventsKeyedSQL,
	} {
		Statements[name] = q
	}
}
