package gitstore

import (
	"context"
	"errors"
	"testing"
	"time"
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
