package render

import (
	"fmt"
	"io"

	"github.com/agentstore/sessionstore/cmd/sessionctl/clitext"
	"github.com/agentstore/sessionstore/cmd/sessionctl/jsonout"
	"github.com/agentstore/sessionstore/cmd/sessionctl/tablefmt"
)

// Listing is what a listing command prints: with --json its document;
// else a line saying there is none, or a header and one row an item as
// an aligned table, then (on stderr) how to read the next page.
type Listing[T any] struct {
	Doc    any            // the --json document
	Items  []T            // the rows
	None   string         // the line printed when there are no items
	Header string         // the column names, tab-separated
	Row    func(T) string // an item's cells, tab-separated (lines under it may follow)
	More   string         // "more sessions follow", said when next is set
	Next   string         // the cursor of the next page (quoted for a shell)
}

// PrintListing prints l on stdout (the next page's hint on stderr), as
// JSON when asJSON.
func PrintListing[T any](stdout, stderr io.Writer, asJSON bool, l Listing[T]) error {
	if asJSON {
		return jsonout.Write(stdout, l.Doc)
	}
	if len(l.Items) == 0 {
		_, err := fmt.Fprintln(stdout, l.None)
		return err
	}
	tw := tablefmt.NewWriter(stdout)
	fmt.Fprintln(tw, l.Header)
	for _, it := range l.Items {
		fmt.Fprintln(tw, l.Row(it))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if l.Next != "" {
		fmt.Fprintf(stderr, "%s: add --after %s for the next page\n", l.More, clitext.ShellQuote(l.Next))
	}
	return nil
}

// Same is a listing's row of a row already written.
func Same(row string) string { return row }
