package odb

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitmem/gitmem/internal/gitexec"
)

// Git runs a git command on the repository.
func (r *Repo) Git(ctx context.Context, args ...string) error {
	_, err := r.GitOutput(ctx, args...)
	return err
}

// GitOutput runs a git command on the repository and returns what it printed.
func (r *Repo) GitOutput(ctx context.Context, args ...string) ([]byte, error) {
	cmd, stderr := r.gitCmd(ctx, args...)
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s in %s: %v: %s", strings.Join(args, " "), r.path, err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// gitCmd prepares a git command on the repository, with its error output in stderr.
func (r *Repo) gitCmd(ctx context.Context, args ...string) (*gitexec.Cmd, *bytes.Buffer) {
	cmd := gitexec.Command(ctx, args...)
	// git runs in the repository, so GIT_DIR is "." there: r.path may be relative to this
	// process's folder (the default data directory, ./gitmem-data), which git's is not.
	cmd.Env = []string{"GIT_DIR=."}
	cmd.Dir = r.path
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	return cmd, &stderr
}

// CatCommits reads the commits hs with one git cat-file --batch, in order, and passes each
// to fn: far faster than decoding them through go-git one by one.
func (r *Repo) CatCommits(ctx context.Context, hs []plumbing.Hash, fn func(c *object.Commit) error) error {
	if len(hs) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd, stderr := r.gitCmd(ctx, "cat-file", "--batch")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("git cat-file in %s: %w", r.path, err)
	}
	go func() {
		w := bufio.NewWriter(stdin)
		for _, h := range hs {
			w.WriteString(h.String())
			w.WriteByte('\n')
		}
		w.Flush()
		stdin.Close()
	}()
	rd := bufio.NewReaderSize(stdout, 1<<20)
	ferr := func() error {
		for _, h := range hs {
			hdr, err := rd.ReadString('\n')
			if err != nil {
				return fmt.Errorf("read commit %s: %w", h, err)
			}
			f := strings.Fields(hdr)
			if len(f) != 3 || f[0] != h.String() || f[1] != "commit" {
				return fmt.Errorf("git cat-file answered %q for commit %s", strings.TrimSpace(hdr), h)
			}
			n, err := strconv.Atoi(f[2])
			if err != nil {
				return fmt.Errorf("git cat-file answered %q for commit %s", strings.TrimSpace(hdr), h)
			}
			buf := make([]byte, n+1)
			if _, err := io.ReadFull(rd, buf); err != nil {
				return fmt.Errorf("read commit %s: %w", h, err)
			}
			o := &plumbing.MemoryObject{}
			o.SetType(plumbing.CommitObject)
			o.Write(buf[:n])
			c := &object.Commit{}
			if err := c.Decode(o); err != nil {
				return fmt.Errorf("decode commit %s: %w", h, err)
			}
			if err := fn(c); err != nil {
				return err
			}
		}
		return nil
	}()
	if ferr != nil {
		cancel()
		cmd.Wait()
		return ferr
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("git cat-file in %s: %v: %s", r.path, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}
