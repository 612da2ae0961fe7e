package main

// The per-conversation record commands: artifacts, traces, runs, reports.

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/agentstore/sessionstore/cmd/sessionctl/jsonout"
	"github.com/agentstore/sessionstore/cmd/sessionctl/render"
	"github.com/agentstore/sessionstore/cmd/sessionctl/specs"
	"github.com/agentstore/sessionstore/cmd/sessionctl/tablefmt"
	"github.com/agentstore/sessionstore/cmd/sessionctl/termout"
	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
)

// recordCmd runs the common part of a record command: flags, one ID
// argument, an existing database. body prints the records.
func recordCmd(ctx context.Context, g *globals, sp spec, args []string, extra func(fs *flag.FlagSet),
	body func(ctx context.Context, st store.Store, id string, asJSON bool) error) error {
	fs := g.newFlags(sp)
	asJSON := fs.Bool("json", false, "print one JSON document")
	if extra != nil {
		extra(fs)
	}
	id, st, err := g.openForID(ctx, fs, sp, args, "id")
	if err != nil {
		return err
	}
	defer st.Close()
	if err := body(ctx, st, id, *asJSON); err != nil {
		return g.fail(sp.Name, withID(id, err))
	}
	return nil
}

// artifactsJSON is the JSON document of artifacts.
type artifactsJSON struct {
	ID        string           `json:"id"`
	Artifacts []store.Artifact `json:"artifacts"`
}

func runArtifacts(ctx context.Context, g *globals, args []string) error {
	var uri *string
	return recordCmd(ctx, g, specs.Artifacts, args,
		func(fs *flag.FlagSet) {
			uri = fs.String("uri", "", "print only the content of the artifact with `URI`")
		},
		func(ctx context.Context, st store.Store, id string, asJSON bool) error {
			conv := st.Conversations()
			if *uri != "" {
				a, err := conv.Artifact(ctx, id, *uri)
				if err != nil {
					return err
				}
				if asJSON {
					return jsonout.Write(g.stdout, a)
				}
				_, err = fmt.Fprint(termout.Content(g.stdout), a.Content)
				return err
			}
			list, err := conv.Artifacts(ctx, id)
			if err != nil {
				return err
			}
			return render.PrintListing(g.stdout, g.stderr, asJSON, render.Listing[store.Artifact]{Doc: artifactsJSON{ID: id, Artifacts: nonNilSlice(list)},
				Items: list, None: "no artifacts", Header: "URI\tTOOL\tBYTES\tSHOWN\tUPDATED",
				Row: func(a store.Artifact) string {
					return fmt.Sprintf("%s\t%s\t%d\t%d\t%s", humanize.Escape(a.URI), tablefmt.OrDash(humanize.Escape(a.ToolName)), a.OriginalBytes, a.ShownBytes, tablefmt.Time(a.UpdatedAt))
				}})
		})
}

// tracesJSON is the JSON document of traces.
type tracesJSON struct {
	ID     string             `json:"id"`
	Traces []store.TraceEvent `json:"traces"`
}

func runTraces(ctx context.Context, g *globals, args []string) error {
	var from *int64
	var limit *int
	var followFlag *bool
	return recordCmd(ctx, g, specs.Traces, args,
		func(fs *flag.FlagSet) {
			from = fs.Int64("from", 0, "first event position `N`")
			limit = fs.Int("limit", 0, "at most `N` events (0: all)")
			followFlag = fs.Bool("follow", false, "then print new trace events as they commit, until interrupted")
		},
		func(ctx context.Context, st store.Store, id string, asJSON bool) error {
			conv := st.Conversations()
			if *followFlag {
				if *limit != 0 {
					return store.Invalid("limit", "does not go with --follow")
				}
				return followTraces(ctx, g, st, id, *from, asJSON)
			}
			events, err := conv.Traces(ctx, id, *from, *limit)
			if err != nil {
				return err
			}
			return render.PrintListing(g.stdout, g.stderr, asJSON, render.Listing[store.TraceEvent]{Doc: tracesJSON{ID: id, Traces: nonNilSlice(events)},
				Items: events, None: "no trace events", Header: "SEQ\tKIND\tNAME\tOK\tEXIT\tDURATION\tOUTPUT\tCREATED",
				Row: func(e store.TraceEvent) string {
					return fmt.Sprintf("%d\t%s\t%s\t%s\t%d\t%dms\t%d\t%s", e.Seq, humanize.Escape(string(e.Kind)), humanize.Escape(e.Name), tablefmt.YesNo(e.Success),
						e.ExitCode, e.DurationMS, e.OutputBytes, tablefmt.Time(e.CreatedAt))
				}})
		})
}

// runsJSON is the JSON document of runs.
type runsJSON struct {
	ID   string            `json:"id"`
	Runs []store.RunRecord `json:"runs"`
}

func runRuns(ctx context.Context, g *globals, args []string) error {
	var events, followFlag *bool
	var run *string
	var from *int64
	return recordCmd(ctx, g, specs.Runs, args,
		func(fs *flag.FlagSet) {
			events = fs.Bool("events", false, "list each run's events under it")
			followFlag = fs.Bool("follow", false, "print the events of --run as they are appended, until interrupted")
			run = fs.String("run", "", "with --follow: the run `ID` to follow")
			from = fs.Int64("from", 0, "with --follow: the first event sequence number `N`")
		},
		func(ctx context.Context, st store.Store, id string, asJSON bool) error {
			conv := st.Conversations()
			switch {
			case *followFlag && *run == "":
				return store.Invalid("follow", "needs --run, the run to follow")
			case !*followFlag && (*run != "" || *from != 0):
				return store.Invalid("run", "--run and --from go with --follow")
			case *followFlag:
				return followRunEvents(ctx, g, st, id, *run, *from, asJSON)
			}
			runs, err := conv.Runs(ctx, id)
			if err != nil {
				return err
			}
			return render.PrintListing(g.stdout, g.stderr, asJSON, render.Listing[store.RunRecord]{Doc: runsJSON{ID: id, Runs: nonNilSlice(runs)},
				Items: runs, None: "no runs", Header: "RUN\tSTATUS\tEVENTS\tCREATED\tUPDATED\tPROMPT",
				Row: func(r store.RunRecord) string {
					s := r.Snapshot
					row := fmt.Sprintf("%s\t%s\t%d\t%s\t%s\t%s", humanize.Escape(s.ID), humanize.Escape(string(s.Status)), s.EventCount,
						tablefmt.Time(s.CreatedAt), tablefmt.Time(s.UpdatedAt), tablefmt.Clip(s.Prompt, 60))
					if *events {
						for _, e := range r.Events {
							row += fmt.Sprintf("\n  #%d\t\t\t%s\t\t%s", e.Seq, tablefmt.Time(e.Timestamp), tablefmt.Clip(render.CompactJSON(e.Event), 60))
						}
					}
					return row
				}})
		})
}

// reportsJSON is the JSON document of reports.
type reportsJSON struct {
	ID      string                     `json:"id"`
	Reports []store.VerificationReport `json:"reports"`
}

func runReports(ctx context.Context, g *globals, args []string) error {
	return recordCmd(ctx, g, specs.Reports, args, nil,
		func(ctx context.Context, st store.Store, id string, asJSON bool) error {
			conv := st.Conversations()
			reports, err := conv.Reports(ctx, id)
			if err != nil {
				return err
			}
			return render.PrintListing(g.stdout, g.stderr, asJSON, render.Listing[store.VerificationReport]{Doc: reportsJSON{ID: id, Reports: nonNilSlice(reports)},
				Items: reports, None: "no verification reports", Header: "SEQ\tSUBJECT\tSTATUS\tCHECKS PASSED\tRISKS\tCREATED",
				Row: func(r store.VerificationReport) string {
					passed := 0
					for _, c := range r.Checks {
						if c.Status == store.VerificationPassed {
							passed++
						}
					}
					return fmt.Sprintf("%d\t%s\t%s\t%d/%d\t%d\t%s", r.Seq, tablefmt.Clip(r.Subject, 40), humanize.Escape(string(r.Status)),
						passed, len(r.Checks), len(r.ResidualRisks), tablefmt.Time(r.CreatedAt))
				}})
		})
}

// nonNilSlice makes JSON print [] rather than null.
func nonNilSlice[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// followTraces prints the conversation's trace events from position from
// on, then as they commit.
func followTraces(ctx context.Context, g *globals, st store.Store, id string, from int64, asJSON bool) error {
	if from < 0 {
		return store.Invalid("from", "must not be negative")
	}
	if ok, err := st.Conversations().Exists(ctx, id); err != nil || !ok {
		if err == nil {
			err = store.ErrNotFound
		}
		return err
	}
	w := []int{5, 17, 20, 3, 4, 8, 6}
	feed := st.Feed().Traces(ctx, store.TraceFeed{ID: id, From: store.Position{Seq: from}, Limit: followLimit})
	err := followAs(ctx, g, feed, asJSON, tablefmt.Cols(w, "SEQ", "KIND", "NAME", "OK", "EXIT", "DURATION", "OUTPUT", "CREATED"), func(e store.TraceEvent) string {
		return tablefmt.Cols(w, fmt.Sprint(e.Seq), humanize.Escape(string(e.Kind)), humanize.Escape(e.Name), tablefmt.YesNo(e.Success), fmt.Sprint(e.ExitCode),
			fmt.Sprintf("%dms", e.DurationMS), fmt.Sprint(e.OutputBytes), tablefmt.Time(e.CreatedAt))
	}, func(e store.TraceEvent) any { return traceLine{e, e.Seq} })
	return followErr("the trace events of conversation "+id, err)
}

// followRunEvents prints the events of one run from sequence number from
// on, then as they are appended.
func followRunEvents(ctx context.Context, g *globals, st store.Store, id, run string, from int64, asJSON bool) error {
	if from < 0 {
		return store.Invalid("from", "must not be negative")
	}
	// Check first, so that nothing is printed for a missing run, and say
	// which one is missing.
	if ok, err := st.Conversations().Exists(ctx, id); err != nil || !ok {
		if err == nil {
			err = store.ErrNotFound
		}
		return err
	}
	if _, err := st.Conversations().Run(ctx, id, run); errors.Is(err, store.ErrNotFound) {
		return &missingError{what: "run " + run + " of conversation " + id}
	} else if err != nil {
		return err
	}
	w := []int{6, 20}
	feed := st.Feed().RunEvents(ctx, store.RunEventFeed{ID: id, RunID: run, From: store.Position{Seq: from}, Limit: followLimit})
	err := follow(ctx, g, feed, asJSON, tablefmt.Cols(w, "SEQ", "TIMESTAMP", "EVENT"), func(e store.RunEvent) string {
		return tablefmt.Cols(w, fmt.Sprint(e.Seq), tablefmt.Time(e.Timestamp), tablefmt.Clip(render.CompactJSON(e.Event), 100))
	})
	return followErr("run "+run+" of conversation "+id, err)
}

// traceLine is a trace event as a follow prints it in JSON: with its
// position also when it is 0 (the store's type leaves a zero seq out).
type traceLine struct {
	store.TraceEvent
	Seq int64 `json:"seq"`
}
