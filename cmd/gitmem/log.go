package main

import (
	"fmt"
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
	var op, session string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "log STORE [PATH]",
		Short: "Show versions, newest first: of the store, or of the memory at PATH",
		Long: `Shows the versions of a store, newest first. With PATH, shows the history of the memory that
is at PATH, or, if none is, of the last memory that was there (also after it was deleted or
renamed away).`,
		Example: `  gitmem log prefs
  gitmem log prefs /style.md --limit 5
  gitmem log prefs --session sesn_01M83PZ34EVJY3C18AZVHGZ9ME`,
		Args: rangeArgs([]string{"STORE"}, "PATH"),
		RunE: func(cmd *cobra.Command, args []string) error {
			f := gitstore.VersionFilter{Operation: gitstore.Operation(op), SessionID: session, Limit: 1000}
			return a.withStoreAPI(cmd.Context(), args[0], func(s storeAPI) error {
				if len(args) == 2 {
					id, err := memoryAtPath(cmd, s, args[1])
					if err != nil {
						return err
					}
					f.MemoryID = id
				}
				var versions []gitstore.Version
				for limit <= 0 || len(versions) < limit {
					page, err := s.Versions(cmd.Context(), f)
					if err != nil {
						return err
					}
					versions = append(versions, page.Versions...)
					if page.NextCursor == "" {
						break
					}
					f.Cursor = page.NextCursor
				}
				if limit > 0 && len(versions) > limit {
					versions = versions[:limit]
				}
				if asJSON {
					out := make([]any, len(versions))
					for i, v := range versions {
						out[i] = versionJSON(v)
					}
					return printJSON(cmd.OutOrStdout(), out)
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "TIME\tOPERATION\tPATH\tBY\tVERSION")
				for _, v := range versions {
					path := v.Path
					if v.RedactedAt != nil {
						path = "(redacted)"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", v.CreatedAt.Local().Format(time.DateTime+".000"),
						v.Operation, path, actorString(v.CreatedBy), v.ID)
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().IntVarP(&limit, "limit", "n", 20, "show at most this many versions (0: all)")
	cmd.Flags().StringVar(&op, "op", "", "only versions of this operation: created, modified or deleted")
	cmd.Flags().StringVar(&session, "session", "", "only versions written by this session (sesn_…), such as a gitmem agent run")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the versions as JSON")
	return cmd
}

// memoryAtPath finds the memory at path, or else the last one that was there.
func memoryAtPath(cmd *cobra.Command, s storeAPI, path string) (string, error) {
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
			return "", fmt.Errorf("no memory is or was at %s", path)
		}
		f.Cursor = page.NextCursor
	}
}

func actorString(a gitstore.Actor) string {
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
