package archive

import (
	"github.com/agentstore/sessionstore/facet"
	"github.com/agentstore/sessionstore/store"
)

// Format names the export document ("format" key); Version is the newest
// version this package writes and reads. Version 2 added the
// agent_sessions section, version 3 the spend and audit sections, version
// 4 the range of an agent event that is a compaction record (and event
// timestamps to the nanosecond), version 5 a conversation's fork point
// (forked_from) and the range of a message that is a compaction record,
// version 6 tenants (a "tenant" in the head of one tenant's export, and
// the other tenants' rows in "tenants": see tenants.go), version 7 an
// encrypted conversation's session data (system prompt, tasks, policies)
// inside its sealed value, which a reader of version 6 would drop without
// a word; Import reads every version from 1 to Version (a document before version 6 restores
// into the default tenant, or ImportOptions.Tenant) and refuses newer
// ones.
const (
	Format  = "sessionctl-export"
	Version = 7
)

// Store is what an export reads and an import writes: every facet of a
// store, its read snapshots, and the restore of exact records (both
// sqlstore.Store and pgstore.Store are one).
type Store interface {
	store.Store
	store.RecordRestorer
}

// Counts counts the items of each facet that an export wrote or an import
// restored: governed sessions, runtime sessions, conversations, agent
// sessions and audit chains. A governed session's spend limits and
// reservations, a conversation's records and an agent session's events
// are part of their item.
type Counts struct {
	Governed      int64 `json:"governed_sessions"`
	Runtime       int64 `json:"runtime_sessions"`
	Conversations int64 `json:"conversations"`
	AgentSessions int64 `json:"agent_sessions"`
	Audit         int64 `json:"audit_chains"`
}

// Of returns the count of one facet (0 for a name of no facet).
func (c *Counts) Of(name facet.Name) int64 {
	if p := c.at(name); p != nil {
		return *p
	}
	return 0
}

// Total is the sum of every facet's count.
func (c Counts) Total() int64 {
	return c.Governed + c.Runtime + c.Conversations + c.AgentSessions + c.Audit
}

// Add adds every count of o to c.
func (c *Counts) Add(o Counts) {
	for _, f := range facet.All() {
		if p := c.at(f.Name); p != nil {
			*p += o.Of(f.Name)
		}
	}
}

// at points at the counter of one facet (nil for a name of no facet).
func (c *Counts) at(name facet.Name) *int64 {
	switch name {
	case facet.Governance:
		return &c.Governed
	case facet.Runtime:
		return &c.Runtime
	case facet.Conversations:
		return &c.Conversations
	case facet.AgentSessions:
		return &c.AgentSessions
	case facet.Audit:
		return &c.Audit
	}
	return nil
}

// Document is a whole export document, for a program that reads one with
// encoding/json (Import reads it one item at a time instead). Its
// sections follow the facet registry.
type Document struct {
	Format     string            `json:"format"`
	Version    int               `json:"version"`
	ExportedAt string            `json:"exported_at"`
	Governed   []GovernedSession `json:"governed_sessions"`
	// Spend holds the governed sessions' spend limits and reservations,
	// and their agents' limits (nil before version 3).
	Spend         *store.SpendRecords `json:"spend,omitempty"`
	Runtime       []RuntimeSession    `json:"runtime_sessions"`
	Conversations []Conversation      `json:"conversations"`
	// AgentSessions is nil in version-1 documents.
	AgentSessions *AgentSessionsSection `json:"agent_sessions,omitempty"`
	// Audit is nil before version 3.
	Audit *AuditSection `json:"audit,omitempty"`
}
