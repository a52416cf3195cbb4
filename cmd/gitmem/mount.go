package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gitmem/gitmem/fsmount"
	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/tooladapter"
)

func init() { register(newMountCmd) }

func newMountCmd(a *app) *cobra.Command {
	var readOnly bool
	var at, sessionID, logLevel string
	cmd := &cobra.Command{
		Use:   "mount STORE DIR",
		Short: "Mount a store as a directory (FUSE) for agents and tools that use plain files",
		Long: `Mounts the store (by id or name) at DIR, an existing directory, until Ctrl-C (or SIGTERM),
then unmounts it. Its memories are files and its folders directories: read them with any
program; a file written and closed (or fsynced) becomes one version; mv, mkdir, rmdir and rm
map to the store's operations (a folder's mv is one group of versions). What the store refuses
is refused with an errno, and logged here: too large (EFBIG), a secret under the reject policy
(EACCES), a name it cannot hold (EPERM), its quota (EDQUOT), a read-only mount (EROFS).

Editors' scratch files (vim's swap and backup files, sed -i's temporary file, name.tmp, ...)
stay in the mount and never reach the store; renaming one over a memory writes that memory.

Writes are recorded as the session given by --session (sesn_...), else as you (as the CLI's
other commands), or, through a server, as its key. While "gitmem serve" holds the data
directory (or with --server), the mount goes through the server with GITMEM_API_KEY, and other
writers' changes show within a second.`,
		Example: `  gitmem mount notes ~/notes
  gitmem mount notes /mnt/memory/notes --session sesn_claude1
  gitmem mount notes /tmp/notes-yesterday --at yesterday`,
		Args: exactArgs("STORE", "DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			level, err := parseLogLevel(logLevel)
			if err != nil {
				return err
			}
			if sessionID != "" && (!strings.HasPrefix(sessionID, tooladapter.SessionPrefix) || len(sessionID) == len(tooladapter.SessionPrefix)) {
				return usageError{fmt.Errorf("--session %q must start with %s", sessionID, tooladapter.SessionPrefix)}
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			return a.withTarget(cmd.Context(), func(t target) error {
				if t.srv != nil && sessionID != "" {
					t.srv = t.srv.WithSession(sessionID)
				}
				s, err := t.find(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				return mountStore(cmd, t, s, args[1], fsmount.Options{ReadOnly: readOnly, Log: log, Actor: mountActor(sessionID)}, at)
			})
		},
	}
	cmd.Flags().BoolVar(&readOnly, "read-only", false, "mount read-only: every change is refused with EROFS")
	atVar(cmd, &at, "mount the store as it was at a time or commit, read-only ("+gitstore.AtFormHint+")")
	cmd.Flags().StringVar(&sessionID, "session", "", "the session id (sesn_...) that writes are recorded as")
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "debug, info, warn or error (the log goes to stderr)")
	return cmd
}

// mountActor is who a mount's writes are by: the session, else the CLI's user.
func mountActor(sessionID string) gitstore.Actor {
	if sessionID != "" {
		return gitstore.Actor{Type: gitstore.SessionActor, ID: sessionID}
	}
	return cliActor()
}

// mountStore mounts s at dir and serves it until the command's context ends (Ctrl-C).
func mountStore(cmd *cobra.Command, t target, s storeAPI, dir string, opts fsmount.Options, at string) error {
	ctx := cmd.Context()
	st, ok := s.(fsmount.Store)
	if !ok {
		return fmt.Errorf("store %s cannot be mounted here", s.ID())
	}
	opts.Store = st
	if at != "" {
		r, err := s.ReaderAt(ctx, at)
		if err != nil {
			return err
		}
		// Through a server the reader asks nothing until it reads: one read here refuses an
		// --at that names no commit before the mount, as the data directory's ReaderAt has.
		if t.srv != nil {
			if _, err := r.List(ctx, gitstore.ListOptions{Depth: 1, Limit: 1}); err != nil {
				return err
			}
		}
		opts.Reader = r
	}
	info, err := s.Info(ctx)
	if err != nil {
		return err
	}
	m, err := fsmount.New(dir, opts)
	if err != nil {
		return err
	}
	mode, who := "read-write", describeActor(opts.Actor)
	switch {
	case at != "":
		mode = "read-only, as it was at " + at
	case opts.ReadOnly:
		mode = "read-only"
	}
	if t.srv != nil {
		who = "the key (GITMEM_API_KEY)"
		if !t.srv.HasKey() {
			who = "the server's local user (no GITMEM_API_KEY)"
		}
		if sid := t.srv.Session(); sid != "" {
			who = "the session " + sid
		}
		who += ", through " + t.srv.URL()
	}
	writes := "writes are versions by " + who
	if mode != "read-write" {
		writes = "writes are refused (EROFS)"
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "mounted the store %q (%s) at %s, %s; %s. Ctrl-C unmounts.\n",
		info.Name, info.ID, dir, mode, writes)
	done := make(chan struct{})
	go func() { m.Wait(); close(done) }()
	select {
	case <-ctx.Done():
	case <-done: // unmounted from outside (umount)
	}
	uctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Unmount(uctx); err != nil {
		return fmt.Errorf("unmount %s: %w", dir, err)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "unmounted %s\n", dir)
	return nil
}

// describeActor names an actor for messages.
func describeActor(a gitstore.Actor) string {
	if a.Type == gitstore.SessionActor {
		return "the session " + a.ID
	}
	if a.Email != "" {
		return fmt.Sprintf("%s <%s>", a.Name, a.Email)
	}
	return a.ID
}
