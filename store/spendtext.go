package store

import (
	"fmt"
	"strconv"
	"strings"
)

// metricNames maps the spellings ParseSpendLimit accepts to metrics.
var metricNames = map[string]SpendMetric{
	"input": MetricInputTokens, "input_tokens": MetricInputTokens,
	"output": MetricOutputTokens, "output_tokens": MetricOutputTokens,
	"tokens": MetricTotalTokens, "total": MetricTotalTokens, "total_tokens": MetricTotalTokens,
	"cost": MetricCost,
}

// ParseSpendLimit parses a limit written METRIC=AMOUNT[/WINDOW], as
// String writes it and as a flag or a configuration file gives it:
// "cost=2.50USD/day", "tokens=100000/hour", "input=5000" (no window:
// the default, WindowLifetime). Metrics are input, output, tokens (or
// their *_tokens names) and cost; an amount of money is decimal with
// its currency code. The error is an *InvalidInputError. The limit is
// checked as far as its text goes: Spend's calls check it whole.
func ParseSpendLimit(s string) (SpendLimit, error) {
	name, rest, ok := strings.Cut(s, "=")
	if !ok {
		return SpendLimit{}, Invalid("limit", fmt.Sprintf("%q is not METRIC=AMOUNT[/WINDOW]", s))
	}
	m, ok := metricNames[strings.ToLower(name)]
	if !ok {
		return SpendLimit{}, Invalid("limit", fmt.Sprintf("%q: unknown metric (input, output, tokens or cost)", name))
	}
	amount, window, _ := strings.Cut(rest, "/")
	lim := SpendLimit{Metric: m, Window: SpendWindow(strings.ToLower(window))}
	if lim.Window != "" && !lim.Window.Valid() {
		return SpendLimit{}, Invalid("limit", fmt.Sprintf("%q: unknown window (lifetime, hour, day or month)", window))
	}
	if m == MetricCost {
		micros, cur, err := ParseMoney(amount)
		if err != nil {
			return SpendLimit{}, err
		}
		lim.Limit, lim.Currency = micros, cur
		return lim, nil
	}
	if strings.HasPrefix(amount, "-") {
		return SpendLimit{}, Invalid("limit", fmt.Sprintf("%s: must not be negative", amount))
	}
	n, err := strconv.ParseInt(amount, 10, 64)
	if err != nil || n < 0 {
		return SpendLimit{}, Invalid("limit", fmt.Sprintf("%q is not a number of tokens", amount))
	}
	lim.Limit = n
	return lim, nil
}

// String writes the limit as ParseSpendLimit reads it.
func (l SpendLimit) String() string {
	amount := strconv.FormatInt(l.Limit, 10)
	if l.Metric == MetricCost {
		amount = FormatMicros(l.Limit) + l.Currency
	}
	return fmt.Sprintf("%s=%s/%s", l.Metric, amount, l.Window)
}

// ParseMoney parses an amount of money with its currency code, "2.50USD",
// into micro-units and the code. The error is an *InvalidInputError.
func ParseMoney(s string) (micros int64, currency string, err error) {
	if strings.HasPrefix(s, "-") {
		return 0, "", Invalid("amount", fmt.Sprintf("%s: must not be negative", s))
	}
	i := strings.IndexFunc(s, func(r rune) bool { return r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' })
	if i <= 0 {
		return 0, "", Invalid("amount", fmt.Sprintf("%q is not an amount with its currency, like 2.50USD", s))
	}
	if micros, err = ParseMicros(s[:i]); err != nil {
		return 0, "", err
	}
	currency = s[i:]
	if err := ValidateCurrency("currency", currency); err != nil {
		return 0, "", err
	}
	return micros, currency, nil
}
