package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxMessageBytes bounds one MCP message that gitmem reads: a line on stdio, a request body
// over HTTP. A memory is at most 100 KB, and JSON escaping can grow it several times.
const MaxMessageBytes = 1 << 20

// Stdio returns the transport for "gitmem mcp": stdin and stdout, one JSON-RPC message a
// line, like the SDK's StdioTransport, except in two ways.
//
// A line that the SDK cannot take is answered here, and the session goes on: the SDK ends
// the session at the first such line, with no answer, and leaves the calls sent after it
// unanswered. A line that is not JSON is answered with a parse error (-32700), a JSON value
// that is not a JSON-RPC 2.0 message with an invalid request (-32600, with the call's id if it
// has one, null for a malformed answer: JSON-RPC never answers an answer), a line longer than
// MaxMessageBytes with an invalid request too (the same bound as /mcp over HTTP; the SDK's
// own line limit was 16 MiB; the line is skipped as it is read, without keeping it), and a batch
// that the SDK would refuse or not answer with an invalid request (see drainReader.batch).
// Messages are cut at newlines, as MCP's stdio transport says ("messages are delimited by
// newlines, and MUST NOT contain embedded newlines"): the next line is where a stream goes
// on after a bad one. (The SDK's decoder also read a message spread over several lines; each
// of its lines is now a parse error.)
//
// The end of stdin waits for the answers to the calls read before it. The SDK stops writing
// as soon as its reader meets the end of its input (go-sdk issue 1061), so a client that
// pipes its calls and closes stdin got no answer to those still running, and could not tell
// whether a write it sent was done.
func Stdio() mcp.Transport {
	return newDrainingTransport(os.Stdin, nopCloser{os.Stdout})
}

func newDrainingTransport(r io.ReadCloser, w io.WriteCloser) mcp.Transport {
	d := &drain{pending: map[jsonrpc.ID]bool{}}
	d.cond = sync.NewCond(&d.mu)
	out := &drainWriter{d: d, w: w}
	return &mcp.IOTransport{
		Reader: &drainReader{d: d, r: r, in: bufio.NewReaderSize(r, 64<<10), out: out},
		Writer: out,
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// drain keeps the ids of the calls read that have no answer written yet.
type drain struct {
	mu      sync.Mutex
	cond    *sync.Cond
	pending map[jsonrpc.ID]bool
	done    bool // closed, or stdout failed: no answer will come
}

// read notes a message handed to the SDK: a call waits for its answer. A call whose id is
// already waiting is refused by the SDK, without an answer: its first answer ends the wait.
func (d *drain) read(m jsonrpc.Message) {
	req, ok := m.(*jsonrpc.Request)
	if !ok || !req.ID.IsValid() {
		return // an answer to the server's own call, or a notification
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pending[req.ID] = true
}

// wrote notes a message written to stdout: an answer ends its call's wait.
func (d *drain) wrote(m jsonrpc.Message) {
	resp, ok := m.(*jsonrpc.Response)
	if !ok {
		return // the server's own call, or a notification
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.pending, resp.ID)
	d.cond.Broadcast()
}

// waiting reports whether a call with this id waits for its answer.
func (d *drain) waiting(id jsonrpc.ID) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.pending[id]
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

// drainReader reads stdin a line at a time and hands the SDK only the lines it can take,
// each a JSON-RPC message or a batch of them, noting the calls; it answers the others itself.
// At the end of stdin it waits for the answers to the calls before it says so.
type drainReader struct {
	d     *drain
	r     io.ReadCloser
	in    *bufio.Reader // r
	out   *drainWriter  // where the lines refused are answered
	line  []byte        // the line being read, at most MaxMessageBytes
	taken []byte        // the last line taken, and its newline
	next  []byte        // what the SDK has yet to read of taken
	ended bool
	// noBatches says why batches are refused, once an initialize has asked for a protocol
	// version in which the SDK refuses them.
	noBatches   string
	initialized bool // an initialize that sets the session's version was read
}

func (r *drainReader) Read(p []byte) (int, error) {
	for len(r.next) == 0 {
		if r.ended {
			r.d.wait()
			return 0, io.EOF
		}
		over, err := r.readLine()
		if err == io.EOF {
			r.ended = true // the end is said at the next read, after the answers
		} else if err != nil {
			return 0, err
		}
		if err := r.take(r.line, over); err != nil {
			return 0, err
		}
	}
	n := copy(p, r.next)
	r.next = r.next[n:]
	return n, nil
}

// readLine reads the next line into r.line, without its newline. Of a line longer than
// MaxMessageBytes it keeps nothing, and says so.
func (r *drainReader) readLine() (over bool, err error) {
	r.line = r.line[:0]
	for {
		chunk, err := r.in.ReadSlice('\n')
		if err == nil {
			chunk = chunk[:len(chunk)-1]
		}
		if !over && len(r.line)+len(chunk) > MaxMessageBytes {
			over, r.line = true, r.line[:0]
		}
		if !over {
			r.line = append(r.line, chunk...)
		}
		if err != bufio.ErrBufferFull {
			return over, err
		}
	}
}

// take hands a line to the SDK if it can take it, and answers it if not.
func (r *drainReader) take(line []byte, over bool) error {
	// A line too long is answered, and the session goes on, as after any other bad line: it
	// was read to its newline without keeping more than MaxMessageBytes of it, and the next
	// line is a message of its own. Ending the session would leave the calls after it
	// unanswered, for no saving.
	if over {
		return r.out.refuse(refusal{code: jsonrpc.CodeInvalidRequest, message: fmt.Sprintf(
			"the line is longer than %d bytes, the most gitmem reads as one message; it was skipped", MaxMessageBytes)})
	}
	// The SDK refuses white space after a message, and skips it before one; a line that is
	// white space only is nothing.
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil
	}
	var msgs []jsonrpc.Message
	var bad *refusal
	switch {
	case !json.Valid(line):
		err := json.Unmarshal(line, new(any))
		bad = &refusal{code: jsonrpc.CodeParseError, message: fmt.Sprintf(
			"the line is not JSON (%v); each line must be one JSON-RPC message", err)}
	case line[0] == '[':
		msgs, bad = r.batch(line)
	default:
		var m jsonrpc.Message
		m, bad = decode(line)
		msgs = []jsonrpc.Message{m}
	}
	if bad != nil {
		return r.out.refuse(*bad)
	}
	for _, m := range msgs {
		r.d.read(m)
		r.initialize(m)
	}
	r.taken = append(append(r.taken[:0], line...), '\n')
	r.next = r.taken
	return nil
}

// batchesEnd is the first MCP protocol version without JSON-RPC batches. The SDK refuses a
// batch, ending the session, once the session has this version or a later one.
const batchesEnd = "2025-06-18"

// initialize notes the protocol version that an initialize call asks for. The SDK sets the
// session's version from the first initialize it runs: the version asked for if it supports
// it, else one from 2025-11-25 on; it refuses batches from then on if that version has none.
// It runs the lines in order, and checks a batch when it runs it: a batch is handed on only
// if no initialize before it asks for a version without batches, so the SDK takes it, however
// many of the lines before it it has run by then.
//
// Only the first initialize that the SDK can decode counts: it refuses any after it as a
// duplicate, and fails one whose params or version are not what it decodes, leaving the
// version to a later one.
func (r *drainReader) initialize(m jsonrpc.Message) {
	req, ok := m.(*jsonrpc.Request)
	if !ok || req.Method != "initialize" || r.initialized {
		return
	}
	var params map[string]json.RawMessage // keys are matched as written, as the SDK does
	if json.Unmarshal(req.Params, &params) != nil || params == nil {
		return
	}
	var v string
	if raw, ok := params["protocolVersion"]; ok && json.Unmarshal(raw, &v) != nil {
		return
	}
	r.initialized = true
	switch {
	case !slices.Contains(mcp.SupportedProtocolVersions(), v):
		r.noBatches = fmt.Sprintf("this session asked for version %q, which gitmem does not support, and so has a version from %s on", v, batchesEnd)
	case v >= batchesEnd:
		r.noBatches = fmt.Sprintf("this session has version %s", v)
	}
}

// maxDepth is how deep the SDK lets a line's arrays and objects nest.
const maxDepth = 1000

// batch checks a batch (a JSON array): the SDK takes it, and answers it with an array, only in
// a session of a protocol version before batchesEnd (or before initialize), and only if it
// holds no notification (the SDK would wait for an answer to it, and never answer the
// batch), no two calls with one id, and no call with the id of a call not answered yet.
// Otherwise it is refused whole: the SDK would end the session.
func (r *drainReader) batch(line []byte) ([]jsonrpc.Message, *refusal) {
	refuse := func(format string, args ...any) ([]jsonrpc.Message, *refusal) {
		return nil, &refusal{code: jsonrpc.CodeInvalidRequest, message: fmt.Sprintf(format, args...)}
	}
	if r.noBatches != "" {
		return refuse("JSON-RPC batches are not part of MCP from protocol version %s on, and %s: send each message on a line of its own", batchesEnd, r.noBatches)
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(line, &raws); err != nil {
		return refuse("%v", err)
	}
	if len(raws) == 0 {
		return refuse("the batch is empty")
	}
	if depth(line) > maxDepth {
		return refuse("the batch nests deeper than %d levels", maxDepth)
	}
	msgs := make([]jsonrpc.Message, len(raws))
	ids := map[jsonrpc.ID]bool{}
	for i, raw := range raws {
		m, bad := decode(raw)
		if bad != nil {
			return refuse("message %d of the batch: %s; the batch was not run", i+1, bad.message)
		}
		if req, ok := m.(*jsonrpc.Request); ok {
			switch {
			case !req.ID.IsValid():
				return refuse("message %d of the batch is a notification: gitmem takes notifications on lines of their own; the batch was not run", i+1)
			case ids[req.ID] || r.d.waiting(req.ID):
				return refuse("message %d of the batch has the id %v of another call not answered yet; the batch was not run", i+1, req.ID.Raw())
			}
			ids[req.ID] = true
		}
		msgs[i] = m
	}
	return msgs, nil
}

// decode decodes one JSON-RPC message as the SDK does, and says what is wrong with one that
// the SDK refuses.
func decode(raw []byte) (jsonrpc.Message, *refusal) {
	var obj map[string]json.RawMessage // keys are matched as written, as the SDK does
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return nil, &refusal{code: jsonrpc.CodeInvalidRequest, message: "a JSON-RPC message is a JSON object, not " + jsonKind(raw)}
	}
	bad := &refusal{code: jsonrpc.CodeInvalidRequest}
	id, hasID := obj["id"]
	switch jsonKind(id) {
	case "a string", "a number":
		bad.id = id // the answer has it
	case "null":
		hasID = false
	}
	var version string
	_ = json.Unmarshal(obj["jsonrpc"], &version)
	method, hasMethod := obj["method"]
	if !hasMethod {
		bad.id = nil // an answer to one of the server's calls: its id is not one of the client's
	}
	m, err := jsonrpc.DecodeMessage(raw)
	switch {
	case version != "2.0":
		bad.message = `a JSON-RPC 2.0 message has "jsonrpc": "2.0"`
	case err == nil:
		return m, nil
	case hasID && bad.id == nil:
		bad.message = `"id" is a string, a number or null, not ` + jsonKind(id)
	case hasMethod && jsonKind(method) != "a string" && jsonKind(method) != "null":
		bad.message = `"method" is a string, not ` + jsonKind(method)
	case !hasMethod && !hasID:
		bad.message = `a message has a "method" (a call or a notification) or an "id" (an answer)`
	default:
		bad.message = err.Error()
	}
	return nil, bad
}

// jsonKind says what kind of JSON value raw is: "an object", "null"...
func jsonKind(raw []byte) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// depth returns how deep the arrays and objects of a JSON value nest.
func depth(value []byte) int {
	var n, most int
	var inString, escaped bool
	for _, b := range value {
		switch {
		case inString && escaped:
			escaped = false
		case inString && b == '\\':
			escaped = true
		case inString:
			inString = b != '"'
		case b == '"':
			inString = true
		case b == '{' || b == '[':
			n++
			most = max(most, n)
		case b == '}' || b == ']':
			n--
		}
	}
	return most
}

// refusal is the answer to a line that the SDK is not given.
type refusal struct {
	id      json.RawMessage // the id of the message, if it has one that can be answered
	code    int64           // a key of errorNames
	message string          // what is wrong, after the error's name
}

// errorNames name the errors of the answers to the lines refused, as the JSON-RPC 2.0
// specification does.
var errorNames = map[int64]string{
	jsonrpc.CodeParseError:     "parse error",
	jsonrpc.CodeInvalidRequest: "invalid request",
}

func (r *drainReader) Close() error {
	r.d.stop()
	return r.r.Close()
}

// drainWriter writes stdout and notes the answers in it.
type drainWriter struct {
	d     *drain
	w     io.WriteCloser
	mu    sync.Mutex // a write is a whole line
	lines lineSplitter
}

func (w *drainWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.w.Write(p)
	if err != nil {
		w.d.stop()
	}
	w.lines.feed(p[:n], w.d.wrote)
	return n, err
}

// refuse writes the error answer to a line. It is not noted: its id, if it has one, is no
// call's that the SDK was given.
func (w *drainWriter) refuse(r refusal) error {
	id := r.id
	if id == nil {
		id = json.RawMessage("null")
	}
	type wireError struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}
	line, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   wireError       `json:"error"`
	}{"2.0", id, wireError{r.code, errorNames[r.code] + ": " + r.message}})
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.w.Write(append(line, '\n')); err != nil {
		w.d.stop()
		return err
	}
	return nil
}

func (w *drainWriter) Close() error {
	w.d.stop()
	return w.w.Close()
}

// lineSplitter cuts the stream of newline-delimited JSON-RPC messages that the SDK writes into
// lines and hands each message to a function. A line longer than the SDK reads is skipped.
type lineSplitter struct {
	buf  []byte
	over bool // the current line is past the limit
}

func (s *lineSplitter) feed(p []byte, each func(jsonrpc.Message)) {
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
func (s *lineSplitter) flush(each func(jsonrpc.Message)) {
	line := bytes.TrimSpace(s.buf)
	over := s.over
	s.buf, s.over = s.buf[:0], false
	if over || len(line) == 0 {
		return
	}
	raws := []json.RawMessage{line}
	if line[0] == '[' && json.Unmarshal(line, &raws) != nil {
		return
	}
	for _, raw := range raws {
		if m, err := jsonrpc.DecodeMessage(raw); err == nil {
			each(m)
		}
	}
}
