package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/httpapi"
)

func init() { register(newLogCmd) }

func newLogCmd(a *app) *cobra.Command {
	var limit int
	var op, session, key, since, until string
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "log [STORE [PATH]]",
		Aliases: []string{"history", "versions"}, // the guide's name, and the API's
		Short:   "Show versions, newest first: of every store, of one, or of the memory at PATH",
		Long: `Shows versions, newest first: of every store (with a STORE column), of STORE, or, with PATH,
of the memory that is at PATH, or, if none is, of the last memory that was there (also after it
was deleted or renamed away). --since and --until take 2026-01-02T15:04:05Z, a date
(2026-01-02), today, yesterday, or a time ago (90m, 1h, 2d).`,
		Example: `  gitmem log prefs
  gitmem log prefs /style.md --limit 5
  gitmem log --since today                       # what changed today, in every store
  gitmem log prefs --key apikey_01M83EQW76530MXJ2NYMV3BFCX --since 2h
  gitmem log prefs --session sesn_01M83PZ34EVJY3C18AZVHGZ9ME`,
		Args: rangeArgs(nil, "STORE", "PATH"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if op != "" && !gitstore.Operation(op).Valid() { // the store's own message would not name the flag
				return usageError{fmt.Errorf("--op must be created, modified or deleted, got %q", op)}
			}
			f := gitstore.VersionFilter{Operation: gitstore.Operation(op), SessionID: session, APIKeyID: key, Limit: 1000}
			var err error
			if f.CreatedAtGTE, f.CreatedAtLTE, err = timeSpan(since, until); err != nil {
				return err
			}
			if len(args) == 2 {
				if err := folderArg("log", args[0], "PATH", args[1]); err != nil {
					return err
				}
			}
			return a.withTarget(cmd.Context(), func(t target) error {
				var ids []string
				names := map[string]string{} // store id -> name, for the STORE column
				if len(args) > 0 {
					id, err := resolveStore(cmd.Context(), t.lister(), args[0])
					if err != nil {
						return err
					}
					ids = []string{id}
				} else {
					stores, err := allStores(cmd.Context(), t.lister(), true)
					if err != nil {
						return err
					}
					for _, info := range stores {
						ids = append(ids, info.ID)
						names[info.ID] = info.Name
					}
				}
				var versions []gitstore.Version
				for _, id := range ids {
					s, err := t.store(cmd.Context(), id)
					if err != nil {
						return err
					}
					sf := f
					if len(args) == 2 {
						if sf.MemoryID, err = memoryAtPath(cmd, s, args[0], args[1]); err != nil {
							return err
						}
					}
					vs, err := versionsOf(cmd.Context(), s, sf, limit)
					if err != nil {
						return err
					}
					versions = append(versions, vs...)
				}
				if len(ids) > 1 { // newest first across stores
					slices.SortStableFunc(versions, func(x, y gitstore.Version) int { return y.CreatedAt.Compare(x.CreatedAt) })
				}
				if limit > 0 && len(versions) > limit {
					versions = versions[:limit]
				}
				if len(versions) == 0 && !asJSON { // not a table's header alone
					a.sayNone(cmd, noVersions(cmd, args, len(ids) == 0))
					return nil
				}
				return printVersions(cmd.OutOrStdout(), versions, asJSON, names, useColor(cmd.OutOrStdout()))
			})
		},
	}
	cmd.Flags().IntVarP(&limit, "limit", "n", 20, "show at most this many versions (0: all)")
	cmd.Flags().StringVar(&op, "op", "", "only versions of this operation: created, modified or deleted")
	cmd.Flags().StringVar(&session, "session", "", "only versions written by this session (sesn_…), such as a gitmem agent run")
	cmd.Flags().StringVar(&key, "key", "", "only versions written with this API key (apikey_…), directly or through its sessions")
	cmd.Flags().StringVar(&since, "since", "", "only versions made at or after this time (today, 1h, 2026-01-02, ...)")
	cmd.Flags().StringVar(&until, "until", "", "only versions made at or before this time; a day (today, 2026-01-02) up to its end")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the versions as JSON")
	return cmd
}

// timeSpan reads --since and --until, each "" for no bound: --until's day (today, a date)
// up to its end, as git log --until=today takes it. A wrong one is a usage error.
func timeSpan(since, until string) (from, to time.Time, err error) {
	for _, b := range []struct {
		flag, v string
		t       *time.Time
		parse   func(string, time.Time) (time.Time, error)
	}{{"--since", since, &from, gitstore.ParseTime}, {"--until", until, &to, gitstore.ParseUntil}} {
		if b.v == "" {
			continue
		}
		if *b.t, err = b.parse(b.v, time.Now()); err != nil {
			return time.Time{}, time.Time{}, usageError{fmt.Errorf("%s: %w", b.flag, err)}
		}
	}
	return from, to, nil
}

// noVersions is what gitmem log says on stderr when it has no version to show: why, and
// what to do.
func noVersions(cmd *cobra.Command, args []string, noStores bool) string {
	var filters []string
	for _, name := range []string{"op", "session", "key", "since", "until"} {
		if cmd.Flags().Changed(name) {
			filters = append(filters, "--"+name)
		}
	}
	switch {
	case noStores:
		return "no stores yet; create one with: gitmem stores create NAME"
	case len(filters) > 0:
		return "no versions match " + joinAnd(filters)
	case len(args) > 0:
		return fmt.Sprintf("no versions yet in %s; write a memory with: gitmem put %s PATH", args[0], quoteArg(args[0]))
	}
	return "no versions yet; write a memory with: gitmem put STORE PATH"
}

// versionsOf pages through a store's versions that f selects, up to limit (0: all).
func versionsOf(ctx context.Context, s storeAPI, f gitstore.VersionFilter, limit int) ([]gitstore.Version, error) {
	var versions []gitstore.Version
	for limit <= 0 || len(versions) < limit {
		page, err := s.Versions(ctx, f)
		if err != nil {
			return nil, err
		}
		versions = append(versions, page.Versions...)
		if page.NextCursor == "" {
			break
		}
		f.Cursor = page.NextCursor
	}
	return versions, nil
}

// printVersions prints versions as a table or JSON; with stores (id -> name) the table has a
// STORE column.
func printVersions(w io.Writer, versions []gitstore.Version, asJSON bool, stores map[string]string, color bool) error {
	withStore := len(stores) > 0
	if asJSON {
		out := make([]any, len(versions))
		for i, v := range versions {
			out[i] = versionJSON(v)
		}
		return printJSON(w, out)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := "TIME\tOPERATION\tPATH\tBY\tVERSION"
	if withStore {
		head += "\tSTORE"
	}
	fmt.Fprintln(tw, head)
	for _, v := range versions {
		path := v.Path
		if v.RedactedAt != nil {
			path = "(redacted)"
		}
		op := string(v.Operation)
		if color { // each code is as long as the others, so the columns stay aligned
			op = "\033[" + map[gitstore.Operation]string{gitstore.OpCreated: "32", gitstore.OpModified: "33", gitstore.OpDeleted: "31"}[v.Operation] + "m" + op + "\033[0m"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s", v.CreatedAt.Local().Format(time.DateTime+".000"),
			op, shown(path), actorString(v.CreatedBy), v.ID)
		if withStore {
			fmt.Fprintf(tw, "\t%s", stores[v.StoreID])
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// memoryAtPath finds the memory at path in s, the store that the command line names store,
// or else the last one that was there.
func memoryAtPath(cmd *cobra.Command, s storeAPI, store, path string) (string, error) {
	m, err := s.GetByPath(cmd.Context(), path, false)
	if err == nil {
		return m.ID, nil
	}
	if !gitstore.IsKind(err, gitstore.KindNotFound) {
		return "", err
	}
	f := gitstore.VersionFilter{Limit: 1000}
	for {
		page, err := s.Versions(cmd.Context(), f)
		if err != nil {
			return "", err
		}
		for _, v := range page.Versions {
			if v.Path == path {
				return v.MemoryID, nil
			}
		}
		if page.NextCursor == "" {
			err := &gitstore.Error{Kind: gitstore.KindNotFound, Message: fmt.Sprintf("no memory is or was at %s", path)}
			return "", notFoundHint(cmd.Context(), s, store, path, err)
		}
		f.Cursor = page.NextCursor
	}
}

// actorString names an actor in the CLI's text output, its text as shown shows it.
func actorString(a gitstore.Actor) string { return shown(actorText(a)) }

func actorText(a gitstore.Actor) string {
	switch {
	case a.Type == gitstore.UserActor && a.Email != "":
		return fmt.Sprintf("%s <%s>", a.Name, a.Email)
	case a.Type == gitstore.SessionActor && a.APIKeyID != "":
		return a.ID + " via " + a.APIKeyID
	default:
		return a.ID
	}
}

// actorJSON is an actor as the HTTP API shows it.
func actorJSON(a gitstore.Actor) map[string]string { return httpapi.ActorJSON(a) }

func versionJSON(v gitstore.Version) map[string]any {
	out := map[string]any{"type": "memory_version", "id": v.ID, "memory_id": v.MemoryID,
		"memory_store_id": v.StoreID, "operation": string(v.Operation), "path": v.Path,
		"created_by": actorJSON(v.CreatedBy), "created_at": v.CreatedAt.UTC().Format(timeFormat),
		"content_sha256": nilIfEmpty(v.ContentSHA256), "content_size_bytes": nil,
		"redacted_at": nil, "redacted_by": nil}
	if v.ApprovedBy != nil {
		out["approved_by"] = actorJSON(*v.ApprovedBy)
	}
	switch {
	case v.RedactedAt != nil:
		out["path"], out["redacted_at"], out["redacted_by"] = nil, v.RedactedAt.UTC().Format(timeFormat), actorJSON(*v.RedactedBy)
	case v.Operation != gitstore.OpDeleted:
		out["content_size_bytes"] = v.SizeBytes
	}
	return out
}

func nilIfEmpty(s string) any {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	return s
}
