package render

import (
	"fmt"
	"io"

	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/sqlstore"
)

// WAL reports a checkpoint (and vacuum) in one or two lines.
func WAL(w io.Writer, r sqlstore.CheckpointResult) {
	state := "truncated"
	if !r.Complete {
		state = "partly checkpointed (readers were active)"
	}
	fmt.Fprintf(w, "wal: %s -> %s, %s\n", humanize.Bytes(r.WALBytesBefore), humanize.Bytes(r.WALBytesAfter), state)
	if r.Vacuumed {
		fmt.Fprintf(w, "vacuum: database file %s smaller\n", humanize.Bytes(r.VacuumedBytes))
	}
}
