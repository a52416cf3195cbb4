package gitserve

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/gitmem/gitmem/internal/gitexec"
)

// objects reads objects through one `git cat-file --batch` process. In a pre-receive hook
// it runs in the hook's environment, so it sees the pushed objects in their quarantine
// directory as well as the repository's own.
type objects struct {
	cmd *gitexec.Cmd
	in  *bufio.Writer
	w   io.WriteCloser
	out *bufio.Reader
}

func newObjects(env []string) (*objects, error) {
	cmd := gitexec.Command(context.Background(), "cat-file", "--batch")
	cmd.Env = env // added to the hook's own environment
	cmd.Stderr = os.Stderr
	w, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	r, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start git cat-file: %w", err)
	}
	return &objects{cmd: cmd, in: bufio.NewWriter(w), w: w, out: bufio.NewReaderSize(r, 64<<10)}, nil
}

func (o *objects) close() {
	o.w.Close()
	o.cmd.Wait()
}

// object is what read returns: the type and size of an object, and its content unless it
// was larger than asked for.
type object struct {
	typ     string
	size    int64
	data    []byte
	missing bool
}

// read reads the object that name names (a hash, or rev:path). Content larger than max is
// skipped, not kept: data is then nil.
func (o *objects) read(name string, max int64) (object, error) {
	if strings.ContainsAny(name, "\n") {
		return object{}, fmt.Errorf("bad object name %q", name)
	}
	if _, err := o.in.WriteString(name + "\n"); err != nil {
		return object{}, fmt.Errorf("git cat-file: %w", err)
	}
	if err := o.in.Flush(); err != nil {
		return object{}, fmt.Errorf("git cat-file: %w", err)
	}
	line, err := o.out.ReadString('\n')
	if err != nil {
		return object{}, fmt.Errorf("git cat-file: %w", err)
	}
	f := strings.Fields(line)
	if len(f) == 2 && (f[1] == "missing" || f[1] == "ambiguous") {
		return object{missing: true}, nil
	}
	if len(f) != 3 {
		return object{}, fmt.Errorf("git cat-file: unexpected answer %q", line)
	}
	size, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return object{}, fmt.Errorf("git cat-file: unexpected answer %q", line)
	}
	obj := object{typ: f[1], size: size}
	if size > max {
		if _, err := io.CopyN(io.Discard, o.out, size); err != nil {
			return object{}, fmt.Errorf("git cat-file: %w", err)
		}
	} else {
		obj.data = make([]byte, size)
		if _, err := io.ReadFull(o.out, obj.data); err != nil {
			return object{}, fmt.Errorf("git cat-file: %w", err)
		}
	}
	if _, err := o.out.Discard(1); err != nil { // the newline after the content
		return object{}, fmt.Errorf("git cat-file: %w", err)
	}
	return obj, nil
}

// maxMeta bounds the commits and trees that the checks read whole.
const maxMeta = 64 << 20

// commitInfo is what the checks need of a commit.
type commitInfo struct {
	tree    string
	parents []string
	subject string
	message string
}

func (o *objects) commit(h string) (commitInfo, error) {
	obj, err := o.read(h, maxMeta)
	if err != nil {
		return commitInfo{}, err
	}
	if obj.missing || obj.typ != "commit" || obj.data == nil {
		return commitInfo{}, fmt.Errorf("%s is not a commit", h)
	}
	var c commitInfo
	head, body, _ := bytes.Cut(obj.data, []byte("\n\n"))
	for _, l := range strings.Split(string(head), "\n") {
		if v, ok := strings.CutPrefix(l, "tree "); ok {
			c.tree = v
		} else if v, ok := strings.CutPrefix(l, "parent "); ok {
			c.parents = append(c.parents, v)
		}
	}
	c.message = string(body)
	c.subject, _, _ = strings.Cut(c.message, "\n")
	if c.tree == "" {
		return commitInfo{}, fmt.Errorf("commit %s has no tree", h)
	}
	return c, nil
}

// entry is one entry of a tree.
type entry struct {
	mode string // as git writes it: 100644, 100755, 120000, 160000, 40000
	name string
	hash string
}

func (e entry) isTree() bool { return e.mode == "40000" }

func (o *objects) tree(h string) ([]entry, error) {
	obj, err := o.read(h, maxMeta)
	if err != nil {
		return nil, err
	}
	if obj.missing || obj.typ != "tree" || obj.data == nil {
		return nil, fmt.Errorf("%s is not a tree", h)
	}
	var es []entry
	for b := obj.data; len(b) > 0; {
		sp := bytes.IndexByte(b, ' ')
		nul := bytes.IndexByte(b, 0)
		if sp < 0 || nul < sp || len(b) < nul+21 {
			return nil, fmt.Errorf("tree %s is malformed", h)
		}
		es = append(es, entry{mode: string(b[:sp]), name: string(b[sp+1 : nul]), hash: fmt.Sprintf("%x", b[nul+1:nul+21])})
		b = b[nul+21:]
	}
	return es, nil
}
