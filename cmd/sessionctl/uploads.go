package main

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/agentstore/sessionstore/cmd/sessionctl/jsonout"
	"github.com/agentstore/sessionstore/cmd/sessionctl/specs"
	"github.com/agentstore/sessionstore/cmd/sessionctl/tablefmt"
	"github.com/agentstore/sessionstore/cmd/sessionctl/termout"
	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
)

// uploadsJSON is the JSON document of uploads.
type uploadsJSON struct {
	ID      string         `json:"id"`
	Uploads []store.Upload `json:"uploads"`
}

// uploadContentJSON is one upload with its content (uploads --ref --json,
// and export files).
type uploadContentJSON struct {
	store.Upload
	ContentBase64 string `json:"content_base64"`
}

func runUploads(ctx context.Context, g *globals, args []string) error {
	sp := specs.Uploads
	fs := g.newFlags(sp)
	ref := fs.String("ref", "", "print the content of the upload `REF`")
	asJSON := fs.Bool("json", false, "print one JSON document")
	id, st, err := g.openForID(ctx, fs, sp, args, "id")
	if err != nil {
		return err
	}
	defer st.Close()
	rt := st.Runtime()
	if *ref != "" {
		u, content, err := rt.ReadUpload(ctx, id, *ref)
		if err != nil {
			return g.fail(sp.Name, withID(id, err))
		}
		if *asJSON {
			err = jsonout.Write(g.stdout, uploadContentJSON{Upload: u, ContentBase64: base64.StdEncoding.EncodeToString(content)})
		} else {
			_, err = termout.Content(g.stdout).Write(content)
		}
		if err != nil {
			return g.fail(sp.Name, err)
		}
		return nil
	}
	list, err := allUploads(ctx, st, id)
	if err != nil {
		return g.fail(sp.Name, withID(id, err))
	}
	if *asJSON {
		return g.result(sp.Name, jsonout.Write(g.stdout, uploadsJSON{ID: id, Uploads: nonNilSlice(list)}))
	}
	if len(list) == 0 {
		fmt.Fprintln(g.stdout, "no uploads")
		return nil
	}
	tw := tablefmt.NewWriter(g.stdout)
	fmt.Fprintln(tw, "REF\tMARKER\tPATH\tSIZE\tSHA256\tCREATED")
	for _, u := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", humanize.Escape(u.RefID), tablefmt.OrDash(tablefmt.Clip(u.Marker, 30)), tablefmt.Cell(u.WorkspacePath),
			humanize.Bytes(u.SizeBytes), humanize.Escape(u.SHA256[:min(12, len(u.SHA256))]), tablefmt.Time(u.CreatedAt))
	}
	if err := tw.Flush(); err != nil {
		return g.fail(sp.Name, err)
	}
	return nil
}

// allUploads reads every upload entry of a runtime session.
func allUploads(ctx context.Context, st cliStore, id string) ([]store.Upload, error) {
	var out []store.Upload
	for u, err := range store.AllUploads(ctx, st.Runtime(), id) {
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}
