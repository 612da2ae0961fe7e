package archive

// Encrypted conversations in an export (issue 29). A conversation the
// store keeps encrypted (store.Conversation.DataKeyID) is written with
// its session data in the clear, as the store keeps it, and its content
// (messages, artifacts, trace events, runs, verification reports) as one
// value sealed with the conversation's own data key from the keyring
// (ExportOptions.Keys), bound to the key and the conversation's id; the
// document names the key (data_key). Like a sealed agent session
// (sealed.go), it needs the keyring to be imported and becomes
// unreadable when the conversation's key is shredded; an export without
// the keyring fails (store.ErrKeyUnavailable) rather than write it in
// plaintext.

import (
	"context"
	"encoding/json"

	sskeys "github.com/agentstore/sessionstore/keys"
	"github.com/agentstore/sessionstore/store"
)

const adArchiveConv = "archive conversation"

// convContent is what a sealed conversation's Sealed value holds.
type convContent struct {
	Messages  []store.Message            `json:"messages"`
	Artifacts []store.Artifact           `json:"artifacts"`
	Traces    []store.TraceEvent         `json:"traces"`
	Runs      []store.RunRecord          `json:"runs"`
	Reports   []store.VerificationReport `json:"reports"`
}

func (c *Conversation) contentAD() []byte {
	return sskeys.AD(adArchiveConv, c.DataKey, c.Conversation.ID)
}

// seal moves c's content into its sealed value, sealed with the data key
// keyID.
func (c *Conversation) seal(ctx context.Context, ring store.KeyRing, keyID string) error {
	dk, err := sessionKey(ctx, ring, keyID)
	if err != nil {
		return err
	}
	b, err := json.Marshal(convContent{Messages: c.Conversation.Messages, Artifacts: c.Artifacts,
		Traces: c.Traces, Runs: c.Runs, Reports: c.Reports})
	if err != nil {
		return err
	}
	c.DataKey = keyID
	c.Sealed = dk.Seal(b, c.contentAD())
	c.Conversation.Messages = []store.Message{}
	c.Artifacts, c.Traces = []store.Artifact{}, []store.TraceEvent{}
	c.Runs, c.Reports = []store.RunRecord{}, []store.VerificationReport{}
	return nil
}

// open restores a sealed conversation's content (no-op for a plaintext
// one). field names c in errors.
func (c *Conversation) open(ctx context.Context, ring store.KeyRing, field string) error {
	if c.DataKey == "" && c.Sealed == "" {
		return nil
	}
	if c.DataKey == "" || c.Sealed == "" {
		return store.Invalid(field+".sealed", "data_key and sealed go together")
	}
	if len(c.Conversation.Messages) > 0 || len(c.Artifacts) > 0 || len(c.Traces) > 0 || len(c.Runs) > 0 || len(c.Reports) > 0 {
		return store.Invalid(field, "a sealed conversation holds no plaintext content")
	}
	dk, err := sessionKey(ctx, ring, c.DataKey)
	if err != nil {
		return err
	}
	p, err := dk.Open([]byte(c.Sealed), c.contentAD())
	if err != nil {
		return err
	}
	var cc convContent
	if err := json.Unmarshal(p, &cc); err != nil {
		return store.Invalid(field+".sealed", "does not hold a conversation's content")
	}
	c.Conversation.Messages, c.Artifacts, c.Traces, c.Runs, c.Reports = cc.Messages, cc.Artifacts, cc.Traces, cc.Runs, cc.Reports
	c.DataKey, c.Sealed = "", ""
	return nil
}
