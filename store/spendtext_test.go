package store

import (
	"errors"
	"strings"
	"testing"
)

func TestParseSpendLimit(t *testing.T) {
	for in, want := range map[string]SpendLimit{
		"cost=2.50USD/day":   {Metric: MetricCost, Window: WindowDay, Limit: 2_500_000, Currency: "USD"},
		"tokens=100000/hour": {Metric: MetricTotalTokens, Window: WindowHour, Limit: 100_000},
		"input=5000":         {Metric: MetricInputTokens, Limit: 5000},
		"OUTPUT_TOKENS=7":    {Metric: MetricOutputTokens, Limit: 7},
	} {
		got, err := ParseSpendLimit(in)
		if err != nil || got != want {
			t.Errorf("%q: %+v, %v; want %+v", in, got, err, want)
			continue
		}
		if want.Window == "" {
			continue
		}
		back, err := ParseSpendLimit(got.String())
		if err != nil || back != got {
			t.Errorf("%q: String %q reads back as %+v, %v", in, got.String(), back, err)
		}
	}
	for _, bad := range []string{"", "cost", "bogus=1", "tokens=-1", "tokens=1/week", "cost=2.50", "cost=2.5/day",
		"cost=1.1234567USD", "cost=1usd", "tokens=x"} {
		if _, err := ParseSpendLimit(bad); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%q: %v, want ErrInvalidInput", bad, err)
		}
	}
}

// A negative amount is said to be negative, not "not a decimal number"
// (limits --limit cost=-1USD said that).
func TestParseNegativeAmount(t *testing.T) {
	for _, in := range []string{"cost=-1USD", "cost=-0.50EUR/day", "tokens=-5", "input=-1/hour"} {
		_, err := ParseSpendLimit(in)
		var ie *InvalidInputError
		if !errors.As(err, &ie) || !strings.Contains(ie.Reason, "must not be negative") {
			t.Errorf("%q: %v, want an invalid input that says the amount must not be negative", in, err)
		}
	}
	if _, _, err := ParseMoney("-2.50USD"); err == nil || !strings.Contains(err.Error(), "-2.50USD: must not be negative") {
		t.Errorf("ParseMoney(-2.50USD): %v", err)
	}
}
