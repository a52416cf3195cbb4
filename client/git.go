package client

import (
	"bytes"
	"context"
	"fmt"
	"strings"

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
