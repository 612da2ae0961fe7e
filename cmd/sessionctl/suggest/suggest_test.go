package suggest

import "testing"

// TestClosest: a typo or a prefix is suggested, an unrelated word is not
// (sessionctl's usage errors: TestDidYouMean).
func TestClosest(t *testing.T) {
	t.Parallel()
	if Closest("x", []string{"list", "show"}) != "" || Closest("sho", []string{"list", "show"}) != "show" || EditDistance("kitten", "sitting") != 3 {
		t.Error("Closest or EditDistance")
	}
}
