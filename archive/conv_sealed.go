package archive

// Encrypted conversations in an export (issue 29). A conversation the
// store keeps encrypted (store.Conversation.DataKeyID) is written with
// the session data the store keeps in the clear (name, workspace, state,
// counters...) in the clear, and its content (messages, artifacts, trace
// events, runs, verification reports, and the system prompt, tasks and
// policy documents of its session data) as one
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
	// Row is the conversation's session data that the store keeps sealed
	// (system prompt, tasks, policy and configuration documents); absent
	// from exports written before the store sealed it, whose session data
	// is all in the clear.
	Row *convRowContent `json:"row,omitempty"`
}

// convRowContent is the sealed part of a conversation's session data.
type convRowContent struct {
	SystemPrompt       string          `json:"system_prompt,omitempty"`
	Tasks              []store.Task    `json:"tasks"`
	QueueConfig        json.RawMessage `json:"queue_config,omitempty"`
	ConfirmationPolicy json.RawMessage `json:"confirmation_policy,omitempty"`
	PermissionPolicy   json.RawMessage `json:"permission_policy,omitempty"`
	SecurityConfig     json.RawMessage `json:"security_config,omitempty"`
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
	cfg := &c.Conversation.Config
	row := &convRowContent{SystemPrompt: cfg.SystemPrompt, Tasks: c.Conversation.Tasks,
		QueueConfig: cfg.QueueConfig, ConfirmationPolicy: cfg.ConfirmationPolicy,
		PermissionPolicy: cfg.PermissionPolicy, SecurityConfig: cfg.SecurityConfig}
	b, err := json.Marshal(convContent{Messages: c.Conversation.Messages, Artifacts: c.Artifacts,
		Traces: c.Traces, Runs: c.Runs, Reports: c.Reports, Row: row})
	if err != nil {
		return err
	}
	c.DataKey = keyID
	c.Sealed = dk.Seal(b, c.contentAD())
	cfg.SystemPrompt, c.Conversation.Tasks = "", []store.Task{}
	cfg.QueueConfig, cfg.ConfirmationPolicy, cfg.PermissionPolicy, cfg.SecurityConfig = nil, nil, nil, nil
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
	dk, err := openKey(ctx, ring, c.DataKey)
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
	if r := cc.Row; r != nil {
		cfg := &c.Conversation.Config
		if cfg.SystemPrompt != "" || len(c.Conversation.Tasks) > 0 || cfg.QueueConfig != nil ||
			cfg.ConfirmationPolicy != nil || cfg.PermissionPolicy != nil || cfg.SecurityConfig != nil {
			return store.Invalid(field, "a sealed conversation holds no plaintext system prompt, tasks or policies")
		}
		cfg.SystemPrompt, c.Conversation.Tasks = r.SystemPrompt, r.Tasks
		cfg.QueueConfig, cfg.ConfirmationPolicy, cfg.PermissionPolicy, cfg.SecurityConfig =
			r.QueueConfig, r.ConfirmationPolicy, r.PermissionPolicy, r.SecurityConfig
	}
	c.DataKey, c.Sealed = "", ""
	return nil
}
