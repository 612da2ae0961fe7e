package pgstore

// WithoutAudit opens a store that appends no audit events: the baseline
// of the audit trail's benchmarks (storetest.Options.NoAudit). Tests only.
func WithoutAudit() Option {
	return func(c *config) { c.auditOff = true }
}
