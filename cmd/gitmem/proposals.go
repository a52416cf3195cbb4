package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/httpapi"
	"github.com/gitmem/gitmem/internal/english"
	"github.com/gitmem/gitmem/proposals"
	"github.com/gitmem/gitmem/tooladapter"
)

func init() { register(newProposalsCmd) }

func newProposalsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "proposals",
		Aliases: []string{"proposal"},
		Short:   "Review what agents propose: list, show, approve, reject, comment",
		Long: `An agent whose key has access propose (gitmem keys create --access propose) writes memories as
any agent does, but its writes go to a proposal of the store instead of main, for a person to
approve or reject (see docs/proposals.md). These commands work on the data directory, or
through the server that holds it (or --server), with a read_write key to decide.`,
	}
	cmd.AddCommand(newProposalsListCmd(a), newProposalsShowCmd(a), newProposalsApproveCmd(a),
		newProposalsRejectCmd(a), newProposalsCommentCmd(a))
	return cmd
}

// propOut is what the text output reads of a proposal.
type propOut struct {
	ID        string            `json:"id"`
	Title     string            `json:"title"`
	State     string            `json:"state"`
	Author    map[string]string `json:"author"`
	CreatedAt string            `json:"created_at"`
	DecidedBy map[string]string `json:"decided_by"`
	Merge     *string           `json:"merge"`
	Comments  []struct {
		Author    map[string]string `json:"author"`
		Body      string            `json:"body"`
		CreatedAt string            `json:"created_at"`
	} `json:"comments"`
	Changes     []proposals.Change    `json:"changes"`
	MergeResult *gitstore.MergeResult `json:"merge_result"`
}

// propCaller does one proposal operation on a store: sub is "" (the list), an id, or
// id/approve, id/reject, id/comments; the answer is the API's.
type propCaller func(method, sub, query string, body map[string]any) (json.RawMessage, error)

// propCalls runs fn with a propCaller of store ref: through the server's API, or on the
// data directory's proposals with the same answers, one manager for all of fn's calls (it
// reads the store's proposals once).
func (a *app) propCalls(ctx context.Context, ref string, fn func(call propCaller) error) error {
	return a.withTarget(ctx, func(t target) error {
		id, err := resolveStore(ctx, t.lister(), ref)
		if err != nil {
			return err
		}
		if t.srv != nil {
			return fn(func(method, sub, query string, body map[string]any) (json.RawMessage, error) {
				path := "/v1/memory_stores/" + id + "/proposals"
				if sub != "" {
					path += "/" + sub
				}
				if query != "" {
					path += "?" + query
				}
				var raw json.RawMessage
				err := t.srv.Call(ctx, method, path, body, &raw)
				return raw, err
			})
		}
		st, err := t.data.Store(ctx, id)
		if err != nil {
			return err
		}
		m := proposals.New(t.data)
		defer m.Close()
		return fn(func(method, sub, query string, body map[string]any) (json.RawMessage, error) {
			v, err := localProposals(ctx, m, st, method, sub, query, body)
			if err != nil {
				return nil, err
			}
			return json.Marshal(v)
		})
	})
}

// propCall does one proposal operation on store ref (propCaller).
func (a *app) propCall(ctx context.Context, ref, method, sub string, query string, body map[string]any) (json.RawMessage, error) {
	var raw json.RawMessage
	err := a.propCalls(ctx, ref, func(call propCaller) (err error) {
		raw, err = call(method, sub, query, body)
		return err
	})
	return raw, err
}

// localProposals answers a proposal operation on the data directory, as the API would.
func localProposals(ctx context.Context, m *proposals.Manager, st *gitstore.Store, method, sub, query string, body map[string]any) (any, error) {
	id, action, _ := strings.Cut(sub, "/")
	me := cliActor()
	switch {
	case sub == "":
		q, err := url.ParseQuery(query)
		if err != nil {
			return nil, err
		}
		opts := proposals.PageOptions{Filter: proposals.Filter{State: proposals.State(q.Get("state"))}, Cursor: q.Get("page")}
		if l := q.Get("limit"); l != "" {
			if opts.Limit, err = strconv.Atoi(l); err != nil {
				return nil, err
			}
		}
		pg, err := m.Page(st.ID(), opts)
		if err != nil {
			return nil, err
		}
		return httpapi.ProposalPage(pg), nil
	case action == "" && method == http.MethodGet:
		p, err := m.Get(st.ID(), id)
		if err != nil {
			return nil, err
		}
		var changes *[]proposals.Change
		if p.State != proposals.Approved && !p.Dropped {
			c, err := m.Diff(ctx, st, id)
			if err != nil {
				return nil, err
			}
			changes = &c
		}
		return httpapi.ProposalObject(p, changes, nil), nil
	case action == "approve":
		allow, _ := body["allow_conflicts"].(bool)
		paths, _ := body["paths"].([]string)
		p, res, err := m.Approve(ctx, st, id, me, proposals.ApproveOptions{AllowConflicts: allow, Paths: paths})
		if err != nil {
			return nil, err
		}
		return httpapi.ProposalObject(p, nil, &res), nil
	case action == "reject":
		var p proposals.Proposal
		var err error
		if c, ok := body["comment"].(string); ok {
			p, err = m.RejectWithComment(ctx, st, id, me, c)
		} else {
			p, err = m.Reject(ctx, st, id, me)
		}
		if err != nil {
			return nil, err
		}
		return httpapi.ProposalObject(p, nil, nil), nil
	case action == "comments":
		c, _ := body["body"].(string)
		p, err := m.AddComment(st.ID(), id, me, c)
		if err != nil {
			return nil, err
		}
		return httpapi.ProposalObject(p, nil, nil), nil
	}
	return nil, fmt.Errorf("unknown proposal operation %s %s", method, sub)
}

// propDo runs propCall and prints its answer: as JSON with asJSON, else with text(p).
func (a *app) propDo(cmd *cobra.Command, ref, method, sub, query string, body map[string]any, asJSON bool, text func(p propOut) error) error {
	raw, err := a.propCall(cmd.Context(), ref, method, sub, query, body)
	if err != nil {
		return err
	}
	var p propOut
	if printed, err := printOrDecode(cmd, raw, asJSON, &p); err != nil || printed {
		return err
	}
	return text(p)
}

func newProposalsListCmd(a *app) *cobra.Command {
	var state string
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "list STORE",
		Short:   "List a store's proposals, newest first",
		Example: "  gitmem proposals list notes\n  gitmem proposals list notes --state open",
		Args:    exactArgs("STORE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch state {
			case "", "open", "approved", "rejected", "superseded":
			default:
				return usageError{fmt.Errorf("--state %q must be open, approved, rejected or superseded", state)}
			}
			all, err := a.allProposals(cmd.Context(), args[0], state)
			if err != nil {
				return err
			}
			raw, err := json.Marshal(map[string]any{"data": append([]json.RawMessage{}, all...)}) // [] for none
			if err != nil {
				return err
			}
			var list struct {
				Data []propOut `json:"data"`
			}
			if printed, err := printOrDecode(cmd, raw, asJSON, &list); err != nil || printed {
				return err
			}
			if len(list.Data) == 0 {
				a.sayNone(cmd, "no proposals")
				return nil
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tSTATE\tBY\tCREATED\tTITLE")
			for _, p := range list.Data {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", shown(p.ID), shown(p.State), shown(actorOf(p.Author)), shown(shownTime(p.CreatedAt)), shown(p.Title))
			}
			return w.Flush()
		},
	}
	cmd.Flags().StringVar(&state, "state", "", "only proposals in this state: open, approved, rejected or superseded")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the proposals as the API lists them, every page's in one data array")
	return cmd
}

// allProposals lists store ref's proposals in state (all for ""), newest first, as the
// API's list gives them, page after page.
func (a *app) allProposals(ctx context.Context, ref, state string) (all []json.RawMessage, err error) {
	q := url.Values{"limit": {strconv.Itoa(proposals.MaxPageSize)}}
	if state != "" {
		q.Set("state", state)
	}
	err = a.propCalls(ctx, ref, func(call propCaller) error {
		all, err = allPages(func(cursor string) ([]json.RawMessage, string, error) {
			if cursor != "" {
				q.Set("page", cursor)
			}
			raw, err := call(http.MethodGet, "", q.Encode(), nil)
			if err != nil {
				return nil, "", err
			}
			var page struct {
				Data     []json.RawMessage `json:"data"`
				NextPage *string           `json:"next_page"`
			}
			err = json.Unmarshal(raw, &page)
			return page.Data, deref(page.NextPage), err
		})
		return err
	})
	return all, err
}

func newProposalsShowCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "show STORE PROPOSAL",
		Short:   "Show a proposal: its thread and what it changes against main, as a diff",
		Example: "  gitmem proposals show notes prop_01M8...",
		Args:    exactArgs("STORE", "PROPOSAL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.propDo(cmd, args[0], http.MethodGet, args[1], "", nil, asJSON, func(p propOut) error {
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "%s  %s  (%s, by %s, %s)\n", shown(p.ID), shown(p.Title), shown(p.State), shown(actorOf(p.Author)), shown(shownTime(p.CreatedAt)))
				for _, c := range p.Comments {
					fmt.Fprintf(out, "  %s, %s: %s\n", shown(actorOf(c.Author)), shown(shownTime(c.CreatedAt)), shown(c.Body))
				}
				if p.State == "approved" && p.Merge != nil {
					fmt.Fprintf(out, "approved by %s: merged into main as %s\n", shown(actorOf(p.DecidedBy)), shown(*p.Merge))
					return nil
				}
				fmt.Fprintf(out, "%d change(s) against main:\n", len(p.Changes))
				for _, c := range p.Changes {
					fmt.Fprintf(out, "\n%s %s\n", c.Operation, shown(c.Path))
					if c.Truncated {
						fmt.Fprintln(out, "  (content left out: the diff is too large to show whole)")
					}
					fmt.Fprint(out, shownText(c.Diff))
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the proposal and its changes as the API gives them")
	return cmd
}

func newProposalsApproveCmd(a *app) *cobra.Command {
	var allow, asJSON bool
	var paths []string
	cmd := &cobra.Command{
		Use:   "approve STORE PROPOSAL [--path PATH ...]",
		Short: "Approve a proposal: merge it into main, its versions by the proposer",
		Long: `Approves a proposal: its changes are merged into main by the rules sync has (a fast-forward if main
has not moved since it opened), and are main's versions, by the agent that made them. If the
merge would conflict with what main has now, nothing is written and the conflicts are listed:
reject the proposal, or approve it with --allow-conflicts to keep both sides of each.

With --path (repeatable), only those memories' changes are approved, each a new version by
the agent, and the others are dropped.`,
		Example: "  gitmem proposals approve notes prop_01M8...",
		Args:    exactArgs("STORE", "PROPOSAL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			body := map[string]any{}
			if allow {
				body["allow_conflicts"] = true
			}
			if len(paths) > 0 {
				body["paths"] = paths
			}
			return a.propDo(cmd, args[0], http.MethodPost, args[1]+"/approve", "", body, asJSON, func(p propOut) error {
				fmt.Fprintf(cmd.OutOrStdout(), "approved %s: main is %s", p.ID, deref(p.Merge))
				if r := p.MergeResult; r != nil {
					fmt.Fprintf(cmd.OutOrStdout(), " (%s)", r.Outcome)
					for _, c := range r.Conflicts {
						fmt.Fprintf(cmd.OutOrStdout(), "\n  conflict at %s: main's side kept at %s", shown(c.Path), shown(c.CopyPath))
					}
				}
				fmt.Fprintln(cmd.OutOrStdout())
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&allow, "allow-conflicts", false, "approve even if the merge with main conflicts, keeping both sides")
	cmd.Flags().StringArrayVar(&paths, "path", nil, "approve only this memory's change (repeatable); the others are dropped")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the approved proposal and the merge as the API gives them")
	return cmd
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func newProposalsRejectCmd(a *app) *cobra.Command {
	var comment string
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "reject STORE PROPOSAL",
		Short:   "Reject a proposal: main does not change; its changes stay readable",
		Example: `  gitmem proposals reject notes prop_01M8... --comment "We ship on Thursdays."`,
		Args:    exactArgs("STORE", "PROPOSAL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			body := map[string]any{}
			if comment != "" {
				body["comment"] = comment
			}
			return a.propDo(cmd, args[0], http.MethodPost, args[1]+"/reject", "", body, asJSON, func(p propOut) error {
				fmt.Fprintf(cmd.OutOrStdout(), "rejected %s\n", p.ID)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&comment, "comment", "", "say why, in the proposal's thread")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the proposal as the API gives it")
	return cmd
}

func newProposalsCommentCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "comment STORE PROPOSAL TEXT",
		Short:   "Add a comment to a proposal's thread",
		Example: `  gitmem proposals comment notes prop_01M8... "Why Fridays?"`,
		Args:    exactArgs("STORE", "PROPOSAL", "TEXT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.propDo(cmd, args[0], http.MethodPost, args[1]+"/comments", "", map[string]any{"body": args[2]}, asJSON, func(p propOut) error {
				fmt.Fprintf(cmd.OutOrStdout(), "commented on %s (%s)\n", p.ID, english.Count(len(p.Comments), "comment"))
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the proposal as the API gives it")
	return cmd
}

// proposeTo makes each attachment that proposes work on the session's proposal of its
// store, in the data directory d: what gitmem agent and gitmem mcp do without a server. The
// session reads the proposal if one is open, else main, and opens one at its first change.
// Close the manager it returns when the session ends.
func proposeTo(d *gitstore.DataDir, atts []tooladapter.Attachment, sessionID string) (*proposals.Manager, error) {
	m := proposals.New(d)
	author := gitstore.Actor{Type: gitstore.SessionActor, ID: sessionID}
	for i, a := range atts {
		if a.Access != tooladapter.Propose {
			continue
		}
		f, opening, err := m.Session(a.Store, author, "Changes by session "+sessionID)
		if err != nil {
			m.Close()
			return nil, err
		}
		atts[i].Store = f
		if opening != nil { // not a nil *Opening in the interface
			atts[i].Proposal = opening
		}
	}
	return m, nil
}

// shownTime shows a time of the API's JSON as the other listings do, in local time; a
// text that is no such time is shown as it is.
func shownTime(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return t.Local().Format(time.DateTime)
}
