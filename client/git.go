package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gitmem/gitmem/gitsync"
	"github.com/gitmem/gitmem/internal/gitexec"
)

// FetchMain fetches the store's main, with its whole history, from the server's git route
// into refs/heads/main of the bare repository gitDir. The key goes to git in its
// environment as a header (never on its command line, which ps shows), and git never
// prompts for one.
func (s *Store) FetchMain(ctx context.Context, gitDir string) error {
	env := []string{"GIT_DIR=" + gitDir, "GIT_TERMINAL_PROMPT=0"}
	if s.c.key != "" {
		env = append(env, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.extraHeader", "GIT_CONFIG_VALUE_0=x-api-key: "+s.c.key)
	}
	var stderr bytes.Buffer
	cmd := gitexec.Command(ctx, "-c", "transfer.fsckObjects=true", "fetch", "--quiet", "--no-tags",
		"--no-write-fetch-head", s.RepoURL(), "+refs/heads/main:refs/heads/main")
	cmd.Env, cmd.Stderr = env, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("git fetch from gitmem server %s: %s", s.c.base, msg)
	}
	return nil
}

// Sync syncs the store with its remotes on the server (with the one named remote, or all
// for ""), as gitmem sync does with a data directory: what each sync did, and an error
// for each remote whose sync failed.
func (s *Store) Sync(ctx context.Context, remote string) ([]gitsync.Result, []error, error) {
	body := map[string]string{}
	if remote != "" {
		body["remote"] = remote
	}
	var w struct {
		Data   []gitsync.Result `json:"data"`
		Errors []string         `json:"errors"`
	}
	if err := s.c.do(ctx, http.MethodPost, s.path("sync"), nil, body, &w); err != nil {
		return nil, nil, err
	}
	var failed []error
	for _, e := range w.Errors {
		failed = append(failed, errors.New(e))
	}
	return w.Data, failed, nil
}
