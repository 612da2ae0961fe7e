package sqlcore

// Statements are the facets' statement texts by name (the constant's name
// without its SQL suffix), for the backends' tests that check query plans
// and the benchmarks that time the statements without the store.
// Dialect-dependent statements are spelled by StatementsFor.
var Statements = map[string]string{
	"artifactAll":     artifactAllSQL,
	"asBump":          asBumpSQL,
	"asGet":           asGetSQL,
	"asInsert":        asInsertSQL,
	"asGetLineage":    asGetLineageSQL,
	"lnChildren":      lnChildrenSQL,
	"lnCompactions":   lnCompactionsSQL,
	"lnKeyAt":         lnKeyAtSQL,
	"lnNextKey":       lnNextKeySQL,
	"lnHolders":       lnHoldersSQL,
	"lnSummary":       lnSummarySQL,
	"asListApp":       asListAppSQL,
	"asListUser":      asListUserSQL,
	"convDelete":      convDeleteSQL,
	"convGet":         convGetSQL,
	"costAll":         costAllSQL,
	"evInsert":        evInsertSQL,
	"listBase":        listBaseSQL,
	"nextApp":         nextAppSQL,
	"nextUser":        nextUserSQL,
	"listParent":      listParentSQL,
	"listTail":        listTailSQL,
	"listUpdated":     listUpdatedSQL,
	"msgAll":          msgAllSQL,
	"msgBefore":       msgBeforeSQL,
	"msgDeleteHead":   msgDeleteHeadSQL,
	"msgLast":         msgLastSQL,
	"msgRange":        msgRangeSQL,
	"reportAll":       reportAllSQL,
	"rtCountByAgent":  rtCountByAgentSQL,
	"rtEvict":         rtEvictSQL,
	"rtHistoryLen":    rtHistoryLenSQL,
	"rtListIDs":       rtListIDsSQL,
	"rtReapCauses":    rtReapCausesSQL,
	"rtReapSession":   rtReapSessionCausesSQL,
	"rtRenewCauses":   rtRenewCausesSQL,
	"rtRenewTurns":    rtRenewTurnsSQL,
	"rtTakeCause":     rtTakeCauseSQL,
	"rtTurn":          rtTurnSQL,
	"runAll":          runAllSQL,
	"runEventsOfConv": runEventsOfConvSQL,
	"runEventsOfRun":  runEventsOfRunSQL,
	"stAppPut":        stAppPutSQL,
	"stScopesGet":     stScopesGetSQL,
	"stSessionPut":    stSessionPutSQL,
	"stUserPut":       stUserPutSQL,
	"stLog":           stLogSQL,
	"stUserPage":      userPageScopesSQL,
	"stale":           staleSQL,
	"traceLast":       traceLastSQL,
	"traceRange":      traceRangeSQL,
	"upList":          upListSQL,
	"upRead":          upReadSQL,
}

// StatementsFor returns the dialect-dependent statements by name, as d
// spells them (for query-plan tests).
func StatementsFor(d *Dialect) map[string]string {
	q := newStatements(d)
	return map[string]string{
		"pageScopes":        q.pageScopes,
		"rtTurnLock":        q.rtTurn,
		"rtTouch":           q.rtTouch,
		"rtPoll":            d.PollTurnsSQL,
		"evByID":            q.events.byID,
		"evRecent":          q.events.recent,
		"evRecentData":      q.eventData.recent,
		"evRecentAfterData": q.eventData.recentAfter,
		"evRecentUpToData":  q.eventData.recentUpTo,
		"evRecentAfter":     q.events.recentAfter,
		"evPage":            q.events.page,
		"evPageInv":         q.events.pageInvocation,
		"evRecentUpTo":      q.events.recentUpTo,
		"evPageUpTo":        q.events.pageUpTo,
	}
}
