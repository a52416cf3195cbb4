package mcpserver

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Stdio returns the transport for "gitmem mcp": stdin and stdout, like the SDK's
// StdioTransport, except that the end of stdin waits for the answers to the calls read
// before it. The SDK stops writing as soon as its reader meets the end of its input (go-sdk
// issue 1061), so a client that pipes its calls and closes stdin got no answer to those
// still running, and could not tell whether a write it sent was done.
func Stdio() mcp.Transport {
	return newDrainingTransport(os.Stdin, nopCloser{os.Stdout})
}

func newDrainingTransport(r io.ReadCloser, w io.WriteCloser) mcp.Transport {
	d := &drain{pending: map[string]bool{}}
	d.cond = sync.NewCond(&d.mu)
	return &mcp.IOTransport{
		Reader: &drainReader{d: d, r: r},
		Writer: &drainWriter{d: d, w: w},
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// drain keeps the ids of the calls read that have no answer written yet.
type drain struct {
	mu      sync.Mutex
	cond    *sync.Cond
	pending map[string]bool
	done    bool // closed, or stdout failed: no answer will come
}

// read notes a message read from stdin: a call waits for its answer. A call whose id is
// already waiting is refused by the SDK, without an answer: it is not noted again.
func (d *drain) read(m message) {
	if m.Method == "" || len(m.ID) == 0 {
		return // an answer to the server's own call, or a notification
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pending[string(m.ID)] = true
}

// wrote notes a message written to stdout: an answer ends its call's wait.
func (d *drain) wrote(m message) {
	if m.Method != "" || len(m.ID) == 0 {
		return // the server's own call, or a notification
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.pending, string(m.ID))
	d.cond.Broadcast()
}

func (d *drain) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.done = true
	d.cond.Broadcast()
}

// drainFor bounds the wait for answers at the end of stdin: a call that the SDK never
// answers must not hold the process forever.
const drainFor = time.Minute

// wait returns once every call read is answered, no answer can come, or after drainFor.
func (d *drain) wait() {
	t := time.AfterFunc(drainFor, d.stop)
	defer t.Stop()
	d.mu.Lock()
	defer d.mu.Unlock()
	for len(d.pending) > 0 && !d.done {
		d.cond.Wait()
	}
}

// drainReader reads stdin and notes the calls in it; at its end it waits for their answers
// before it says so.
type drainReader struct {
	d     *drain
	r     io.ReadCloser
	lines lineSplitter
	ended bool
}

func (r *drainReader) Read(p []byte) (int, error) {
	if r.ended {
		r.d.wait()
		return 0, io.EOF
	}
	n, err := r.r.Read(p)
	r.lines.feed(p[:n], r.d.read)
	if err == io.EOF {
		r.lines.flush(r.d.read)
		r.ended = true
		if n > 0 {
			return n, nil // the end is said at the next read, after the answers
		}
		r.d.wait()
	}
	return n, err
}

func (r *drainReader) Close() error {
	r.d.stop()
	return r.r.Close()
}

// drainWriter writes stdout and notes the answers in it.
type drainWriter struct {
	d     *drain
	w     io.WriteCloser
	lines lineSplitter
}

func (w *drainWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if err != nil {
		w.d.stop()
	}
	w.lines.feed(p[:n], w.d.wrote)
	return n, err
}

func (w *drainWriter) Close() error {
	w.d.stop()
	return w.w.Close()
}

// lineSplitter cuts a stream of newline-delimited JSON-RPC messages into lines and hands
// each message to a function. A line longer than the SDK reads is skipped: the SDK refuses it.
type lineSplitter struct {
	buf  []byte
	over bool // the current line is past the limit
}

func (s *lineSplitter) feed(p []byte, each func(message)) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.keep(p)
			return
		}
		s.keep(p[:i])
		s.flush(each)
		p = p[i+1:]
	}
}

func (s *lineSplitter) keep(p []byte) {
	if s.over || len(s.buf)+len(p) > mcp.DefaultMaxLineLength {
		s.over, s.buf = true, s.buf[:0]
		return
	}
	s.buf = append(s.buf, p...)
}

// flush hands on the messages of the line kept so far, one or a batch, and starts a new line.
func (s *lineSplitter) flush(each func(message)) {
	line := bytes.TrimSpace(s.buf)
	over := s.over
	s.buf, s.over = s.buf[:0], false
	if over || len(line) == 0 {
		return
	}
	var batch []message
	if line[0] == '[' {
		if json.Unmarshal(line, &batch) != nil {
			return
		}
	} else {
		var m message
		if json.Unmarshal(line, &m) != nil {
			return
		}
		batch = append(batch, m)
	}
	for _, m := range batch {
		each(m)
	}
}

// message is what tells JSON-RPC messages apart: a call has a method and an id, an answer
// an id and no method.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}
