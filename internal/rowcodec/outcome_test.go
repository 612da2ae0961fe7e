package rowcodec

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

func TestUseOutcomeRoundTrip(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_123).UTC()
	for _, refusal := range []error{
		&store.ClosedError{SessionID: "s"},
		&store.ExpiredError{SessionID: "s", ExpiresAt: at},
		&store.BudgetError{SessionID: "s", Limit: 3, Used: 2, Requested: 2},
		&store.ToolError{SessionID: "s", Tool: "bash"},
		&store.RateLimitError{SessionID: "s", Limit: 5, Window: time.Minute, WindowCalls: 5, Requested: 1},
	} {
		kind, detail, ok := EncodeUseOutcome(refusal)
		if !ok || kind == UseOutcomeOK {
			t.Fatalf("EncodeUseOutcome(%T) = %q, %v", refusal, kind, ok)
		}
		got, err := DecodeUseOutcome(kind, detail)
		if err != nil || !reflect.DeepEqual(got, refusal) {
			t.Fatalf("DecodeUseOutcome(%q, %s) = %#v, %v; want %#v", kind, detail, got, err, refusal)
		}
	}
	if kind, _, ok := EncodeUseOutcome(nil); !ok || kind != UseOutcomeOK {
		t.Fatalf("success encodes as %q, %v", kind, ok)
	}
	for _, other := range []error{&store.AgentMismatchError{}, &store.NotFoundError{}, errors.New("disk")} {
		if _, _, ok := EncodeUseOutcome(other); ok {
			t.Fatalf("%T is recorded", other)
		}
	}
	for _, bad := range [][2]string{{"nonsense", "{}"}, {UseOutcomeBudget, "not json"}} {
		if _, err := DecodeUseOutcome(bad[0], bad[1]); !errors.Is(err, store.ErrCorrupt) {
			t.Fatalf("DecodeUseOutcome(%q, %q): %v, want ErrCorrupt", bad[0], bad[1], err)
		}
	}
}

func TestUseSuccessRoundTrip(t *testing.T) {
	s := store.Session{ID: "s", CallsMade: 3, RateWindowStart: time.UnixMilli(1_700_000_000_123).UTC(),
		RateWindowCalls: 2, Status: store.StatusActive, CallBudget: 10}
	u, recorded, err := DecodeUseSuccess(EncodeUseSuccess(s))
	if err != nil || !recorded {
		t.Fatalf("DecodeUseSuccess: %+v, %v, %v", u, recorded, err)
	}
	now := s
	now.CallsMade, now.RateWindowCalls, now.Status = 9, 1, store.StatusClosed
	now.RateWindowStart = now.RateWindowStart.Add(time.Hour)
	if got := u.Replay(now); !reflect.DeepEqual(got, s) {
		t.Fatalf("Replay = %+v, want %+v", got, s)
	}
	// Records of older versions hold no counters.
	if _, recorded, err := DecodeUseSuccess("{}"); recorded || err != nil {
		t.Fatalf(`DecodeUseSuccess("{}") = %v, %v`, recorded, err)
	}
	for _, bad := range []string{"", "[", `{"calls_made":-1}`, `{"calls_made":"x"}`} {
		if _, _, err := DecodeUseSuccess(bad); !errors.Is(err, store.ErrCorrupt) {
			t.Errorf("DecodeUseSuccess(%q): %v, want ErrCorrupt", bad, err)
		}
	}
}
