package httpapi

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitstore"
)

// limitedServer is the real server on a loopback listener, served by ServeListener (with its
// connection cap and timeouts, which httptest's server would not have) within limits, with
// its health probes.
type limitedServer struct {
	url  string
	data *gitstore.DataDir
	keys *apikeys.Keys
}

func startLimited(t *testing.T, limits Limits) *limitedServer {
	t.Helper()
	d, keys := openDir(t, t.TempDir())
	srv := New(d, keys, Options{Limits: limits, RequireKeys: true})
	srv.EnableHealth(ReadyChecks(d, nil))
	url, stop := serveListener(t, srv)
	t.Cleanup(func() { stop(); d.Close() })
	return &limitedServer{url: url, data: d, keys: keys}
}

// serveListener serves srv with ServeListener on a loopback port, and returns its URL and
// what stops it (and waits for it to stop).
func serveListener(t *testing.T, srv *Server) (string, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.ServeListener(ctx, ln); close(done) }()
	return "http://" + ln.Addr().String(), func() { cancel(); <-done }
}

// get sends GET path with key, from a client of its own (connections of its own), and
// returns the status and body; a client that waits 10 s fails the test, as it did the
// reviewer's curl -m 10.
func (ls *limitedServer) get(t *testing.T, path, key string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{}}
	req, _ := http.NewRequest("GET", ls.url+path, nil)
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestEventStreamLimits: one key holds at most MaxStreamsPerKey streams (then 429, naming the
// flag), every key together at most half of MaxConns (then 503); with every stream taken, a
// health probe and another key's requests are still answered, and a closed stream makes
// room again.
func TestEventStreamLimits(t *testing.T) {
	ls := startLimited(t, Limits{MaxConns: 16, MaxStreamsPerKey: 3}) // 8 streams in all
	st, err := ls.data.CreateStore(context.Background(), gitstore.CreateStoreInput{Name: "watched", Actor: LocalUser})
	if err != nil {
		t.Fatal(err)
	}
	secret := func(name string, access apikeys.Access, store string) string {
		_, s, err := ls.keys.Create(name, access, store)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// As the reviewer's: a read-only key limited to one store.
	reader := secret("reader", apikeys.ReadOnly, st.ID())
	others := []string{secret("b", apikeys.ReadOnly, ""), secret("c", apikeys.ReadOnly, "")}
	admin := secret("admin", apikeys.ReadWrite, "")
	url := ls.url + "/v1/memory_stores/" + st.ID() + "/events"

	var readers []*stream
	for i := range 3 {
		s, status := openStream(t, url, reader)
		if status != 200 {
			t.Fatalf("stream %d of the key: %d", i+1, status)
		}
		readers = append(readers, s)
	}
	for _, u := range []string{url, ls.url + "/v1/events"} {
		status, body, retry := refused(t, u, reader)
		if status != http.StatusTooManyRequests || !strings.Contains(string(body), "rate_limit_error") ||
			!strings.Contains(string(body), "3 event streams open") || !strings.Contains(string(body), "--max-streams-per-key") {
			t.Errorf("a 4th stream of one key (%s): %d %s, want 429 naming the limit", u, status, body)
		}
		// The SDKs retry a 429 after Retry-After: it is there, a few seconds.
		if retry != "5" {
			t.Errorf("a 4th stream of one key (%s): Retry-After %q, want 5", u, retry)
		}
	}
	// Other keys fill what is left of the server's 8.
	for _, key := range others {
		for i := range 3 {
			if len(readers) == 8 {
				break
			}
			s, status := openStream(t, url, key)
			if status != 200 {
				t.Fatalf("stream %d of another key: %d", i+1, status)
			}
			readers = append(readers, s)
		}
	}
	status, body, retry := refused(t, url, admin)
	if status != http.StatusServiceUnavailable || !strings.Contains(string(body), "limit of 8 event streams") || retry != "5" {
		t.Errorf("a stream beyond the server's limit: %d %s, Retry-After %q, want 503 with Retry-After 5", status, body, retry)
	}
	// Every stream taken: the probe, and another key's requests, are answered.
	if status, body := ls.get(t, "/livez", ""); status != 200 {
		t.Errorf("livez with every stream taken: %d %s", status, body)
	}
	if status, body := ls.get(t, "/readyz", ""); status != 200 {
		t.Errorf("readyz with every stream taken: %d %s", status, body)
	}
	if status, body := ls.get(t, "/v1/memory_stores", admin); status != 200 || !strings.Contains(body, st.ID()) {
		t.Errorf("list stores with every stream taken: %d %s", status, body)
	}
	// A stream that closes is room for the next one of its key.
	readers[0].resp.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, status := openStream(t, url, reader)
		if status == 200 {
			break
		}
		s.resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatalf("a closed stream left no room for its key: %d", status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestHeldConnectionsLeaveRoom: connections that hold the server's every slot without
// sending a whole request (headers sent in part, or nothing) do not keep a probe or a
// request out: a new connection takes the place of the one that waited longest, and that
// one is closed. The header timeout is set long, so that it is not what makes room.
func TestHeldConnectionsLeaveRoom(t *testing.T) {
	ls := startLimited(t, Limits{MaxConns: 8, HeaderTimeout: time.Minute})
	_, admin, err := ls.keys.Create("admin", apikeys.ReadWrite, "")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	for i := range 10 {
		conn, err := net.Dial("tcp", strings.TrimPrefix(ls.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		if i%2 == 0 {
			io.WriteString(conn, "GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Half: ")
		}
		held = append(held, conn)
	}
	for range 3 {
		if status, body := ls.get(t, "/livez", ""); status != 200 {
			t.Errorf("livez with every connection held: %d %s", status, body)
		}
		if status, body := ls.get(t, "/v1/memory_stores", admin); status != 200 {
			t.Errorf("list stores with every connection held: %d %s", status, body)
		}
	}
	// The first held connection made room: the server closed it.
	held[0].SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := bufio.NewReader(held[0]).ReadByte(); err == nil || isTimeout(err) {
		t.Errorf("the connection held longest: read %v, want it closed", err)
	}
}

// TestHeldBodiesLeaveRoom: a request whose body is held unsent (here on the event stream's
// route, without a key, and answered 401 before its body) is dropped at the body timeout,
// not kept for ever: once the held connections are dropped, a probe gets in.
func TestHeldBodiesLeaveRoom(t *testing.T) {
	ls := startLimited(t, Limits{MaxConns: 4, BodyTimeout: 500 * time.Millisecond})
	for range 4 {
		conn, err := net.Dial("tcp", strings.TrimPrefix(ls.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		io.WriteString(conn, "GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\nx")
	}
	if status, body := ls.get(t, "/livez", ""); status != 200 {
		t.Errorf("livez with every connection holding a body: %d %s", status, body)
	}
}

// refused opens a stream that should be refused, and returns the status, body and
// Retry-After of the refusal (none if it opened: a stream's body does not end).
func refused(t *testing.T, url, key string) (int, string, string) {
	t.Helper()
	s, status := openStream(t, url, key)
	if status == http.StatusOK {
		s.resp.Body.Close()
		return status, "(a stream)", ""
	}
	b, _ := io.ReadAll(s.resp.Body)
	return status, string(b), s.resp.Header.Get("Retry-After")
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
