package gitstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gitmem/gitmem/internal/gitexec"
)

// A write that reaches a closed store is answered with ErrStoreClosed, of the retryable
// kind, and never waits: the writer has gone, but the queue still has room (a send to it
// succeeds), so the request must not wait for an answer no one will give.
func TestWriteAfterCloseIsAnswered(t *testing.T) {
	s := newTestStore(t)
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ { // the select between queue and quit is random: try it often
		errc := make(chan error, 1)
		go func() {
			_, err := s.Write(context.Background(), WriteInput{Path: "/a.md", Content: "x", Actor: apiActor})
			errc <- err
		}()
		select {
		case err := <-errc:
			if !errors.Is(err, ErrStoreClosed) || ErrorKind(err) != KindUnavailable {
				t.Fatalf("write after close: %v (kind %q), want ErrStoreClosed of kind %q", err, ErrorKind(err), KindUnavailable)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a write after close was never answered")
		}
	}
}

// Without git, whatever needed it (gc, redact, sync, the git route) fails with ErrNoGit,
// which is of KindUnsupported wherever it comes from, wrapped or not: each interface maps
// it once (HTTP: 501), never as an internal error.
func TestNoGitIsUnsupported(t *testing.T) {
	for _, err := range []error{ErrNoGit, gitexec.NoGit("sync needs git"), fmt.Errorf("sync origin: %w", ErrNoGit)} {
		if k := ErrorKind(err); k != KindUnsupported {
			t.Errorf("ErrorKind(%v) = %q, want %q", err, k, KindUnsupported)
		}
	}
}

// The message of each retryable error says to retry, whichever interface shows it (the
// tools, the CLI, an HTTP client other than the SDKs).
func TestUnavailableSaysRetry(t *testing.T) {
	if !strings.HasSuffix(ErrStoreClosed.Error(), "; try again in a moment") {
		t.Errorf("ErrStoreClosed: %q does not say to try again", ErrStoreClosed)
	}
}
