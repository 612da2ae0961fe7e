package sqlstore_test

// The fault-point sweep over the runtime facet's writes.

import (
	"context"
	"time"

	"github.com/agentstore/sessionstore/store"
)

func runtimeSetup(ctx context.Context, st store.Store) error {
	rt := st.Runtime()
	for _, id := range []string{"r1", "r2"} {
		if _, err := rt.Insert(ctx, store.NewRuntimeSession{ID: id, AgentAlias: "agent", WorkspaceDir: "/w/" + id,
			ChatMode: store.ChatModeChat, OwnerID: "owner-1"}); err != nil {
			return err
		}
	}
	if _, err := rt.PutUpload(ctx, store.PutUploadRequest{SessionID: "r1", RefID: "u1", WorkspacePath: "/w/u1", Content: []byte("file one")}); err != nil {
		return err
	}
	_, err := st.Conversations().Save(ctx, sweepConversation("r1", "hi"))
	return err
}

func runtimeSweepOps() []sweepOp {
	model := "model-b"
	return []sweepOp{
		{name: "Insert", setup: runtimeSetup, run: func(ctx context.Context, st store.Store) error {
			_, err := st.Runtime().Insert(ctx, store.NewRuntimeSession{ID: "r3", AgentAlias: "agent", WorkspaceDir: "/w", ChatMode: store.ChatModeACP})
			return err
		}},
		{name: "Touch", setup: runtimeSetup, at: 5 * time.Second, run: func(ctx context.Context, st store.Store) error {
			return st.Runtime().Touch(ctx, "r1")
		}},
		{name: "SetOverrides", setup: runtimeSetup, run: func(ctx context.Context, st store.Store) error {
			_, err := st.Runtime().SetOverrides(ctx, "r1", store.Overrides{Model: &model})
			return err
		}},
		{name: "PutUpload", setup: runtimeSetup, run: func(ctx context.Context, st store.Store) error {
			_, err := st.Runtime().PutUpload(ctx, store.PutUploadRequest{SessionID: "r2", RefID: "u2", WorkspacePath: "/w/u2", Content: []byte("file two")})
			return err
		}},
		{name: "PutUploadSameContent", setup: runtimeSetup, run: func(ctx context.Context, st store.Store) error {
			_, err := st.Runtime().PutUpload(ctx, store.PutUploadRequest{SessionID: "r2", RefID: "u1", WorkspacePath: "/w/u1", Content: []byte("file one")})
			return err
		}},
		{name: "EvictSameModeSiblings", setup: runtimeSetup, run: func(ctx context.Context, st store.Store) error {
			_, err := st.Runtime().EvictSameModeSiblings(ctx, store.EvictRequest{OwnerID: "owner-1", ChatMode: store.ChatModeChat, ExceptID: "r2"})
			return err
		}},
		{name: "Remove", setup: runtimeSetup, run: func(ctx context.Context, st store.Store) error {
			_, err := st.Runtime().Remove(ctx, "r1")
			return err
		}},
		{name: "Kill", setup: runtimeSetup, run: func(ctx context.Context, st store.Store) error {
			_, err := st.Runtime().Kill(ctx, "r1")
			return err
		}},
	}
}
