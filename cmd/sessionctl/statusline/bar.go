package statusline

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// Bar returns a progress reporter: a one-line bar on w when w is a
// terminal and the output is for people (not quiet), otherwise nothing.
// A name of "" erases the bar.
func Bar(w io.Writer, quiet bool) func(string, float64) {
	f, ok := w.(*os.File)
	if quiet || !ok {
		return func(string, float64) {}
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return func(string, float64) {}
	}
	var mu sync.Mutex
	return func(name string, frac float64) {
		mu.Lock()
		defer mu.Unlock()
		if name == "" {
			fmt.Fprint(w, "\r\033[K")
			return
		}
		frac = min(max(frac, 0), 1)
		const width = 30
		n := int(frac * width)
		fmt.Fprintf(w, "\r\033[K%-28s [%s%s] %3.0f%%", name, strings.Repeat("#", n), strings.Repeat(".", width-n), frac*100)
	}
}
