package gitserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// A push is accepted in two steps, before git moves main: the hook checks it, then asks the
// server, over a unix socket that exists for that one push (its path in acceptEnv), to
// accept the commits it checked. The server records what it must (the key that pushed
// them, Request.Accept) and answers "ok", or a reason, which the hook shows the pusher when
// it refuses the push. So a push is never accepted unless the server has recorded it.
//
// The socket is in a directory that only this user may enter (os.MkdirTemp makes it 0700),
// as the hook runs as the server's user.

// acceptTimeout bounds one question of the hook to the server: the server records a push
// in one catalog transaction, which waits at most for one group of the store's writer.
const acceptTimeout = 2 * time.Minute

// maxAcceptRequest bounds the hook's question: the commits as JSON strings (main's, and as
// many for all proposal branches: checkProposal), and a name.
const maxAcceptRequest = 2*maxCommits*44 + 4096

// acceptOK is the server's answer when it accepted the push.
const acceptOK = "ok"

// acceptor is the server's end of one push's socket.
type acceptor struct {
	dir      string
	ln       *net.UnixListener
	done     chan struct{}
	accepted bool // read after done is closed
}

// listenAccept opens the socket of one push and answers the hook's question on it with
// accept.
func listenAccept(ctx context.Context, accept func(context.Context, Push) error) (*acceptor, error) {
	dir, err := os.MkdirTemp("", "gitmem-push-")
	if err != nil {
		return nil, fmt.Errorf("make the push's socket: %w", err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Net: "unix", Name: filepath.Join(dir, "accept")})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("make the push's socket: %w", err)
	}
	a := &acceptor{dir: dir, ln: ln, done: make(chan struct{})}
	go a.serve(ctx, accept)
	return a, nil
}

// path is the socket's path, for the hook's environment.
func (a *acceptor) path() string { return a.ln.Addr().String() }

// serve answers the one hook of the push.
func (a *acceptor) serve(ctx context.Context, accept func(context.Context, Push) error) {
	defer close(a.done)
	conn, err := a.ln.AcceptUnix()
	if err != nil {
		return // closed: git ran no hook (nothing to push, or refused before)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(acceptTimeout))
	var p Push
	if err := json.NewDecoder(io.LimitReader(conn, maxAcceptRequest)).Decode(&p); err != nil {
		fmt.Fprintf(conn, "the server could not read the push's commits: %v\n", err)
		return
	}
	if err := accept(ctx, p); err != nil {
		msg := strings.ReplaceAll(err.Error(), "\n", " ")
		if errors.As(err, new(Refusal)) {
			msg = refusedPrefix + msg
		}
		fmt.Fprintln(conn, msg)
		return
	}
	_, err = io.WriteString(conn, acceptOK+"\n")
	a.accepted = err == nil
}

// close closes the socket, once git is done, and says whether the push was accepted.
func (a *acceptor) close() bool {
	a.ln.Close()
	<-a.done
	os.RemoveAll(a.dir)
	return a.accepted
}

// askAccept is the hook's end: it sends the commits it checked to the server at path and
// waits for the answer. nil means that the server accepted them.
func askAccept(path string, p Push) error {
	conn, err := net.DialTimeout("unix", path, 10*time.Second)
	if err != nil {
		return fmt.Errorf("the server did not answer: %w", err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(acceptTimeout))
	if err := json.NewEncoder(conn).Encode(p); err != nil {
		return fmt.Errorf("the server did not answer: %w", err)
	}
	if err := conn.(*net.UnixConn).CloseWrite(); err != nil {
		return fmt.Errorf("the server did not answer: %w", err)
	}
	answer, err := io.ReadAll(io.LimitReader(conn, 4096))
	if err != nil {
		return fmt.Errorf("the server did not answer: %w", err)
	}
	switch a := strings.TrimSpace(string(answer)); a {
	case acceptOK:
		return nil
	case "":
		return errors.New("the server did not answer")
	default:
		if reason, ok := strings.CutPrefix(a, refusedPrefix); ok {
			return Refusal(reason)
		}
		return errors.New(a)
	}
}

// Refusal is an error of Request.Accept that is a rule the push breaks, not a failure to
// record it: the pusher reads it as the hook's own refusals.
type Refusal string

func (r Refusal) Error() string { return string(r) }

// refusedPrefix starts the server's answer to the hook when it is a Refusal.
const refusedPrefix = "refused: "
