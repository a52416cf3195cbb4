package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rawConn is a TCP connection to a running gitmem serve, written to by hand.
type rawConn struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

func dial(t *testing.T, url string) *rawConn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &rawConn{t: t, conn: conn, r: bufio.NewReader(conn)}
}

func (c *rawConn) write(s string) error {
	_, err := io.WriteString(c.conn, s)
	return err
}

// response reads one response, waiting at most wait.
func (c *rawConn) response(wait time.Duration) (*http.Response, string, error) {
	c.conn.SetReadDeadline(time.Now().Add(wait))
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return nil, "", err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b), err
}

// closedWithin tells whether the server closes the connection within wait, and how soon.
func (c *rawConn) closedWithin(wait time.Duration) (bool, time.Duration) {
	start := time.Now()
	c.conn.SetReadDeadline(start.Add(wait))
	_, err := c.r.ReadByte()
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false, time.Since(start)
	}
	return err != nil, time.Since(start)
}

// TestServeLimitsRefuseZero: a limit of the server set to 0 or less, from a flag, the
// environment or the config file, is refused with exit 2 and where it was set, and no server
// starts; before, it was taken silently as the default.
func TestServeLimitsRefuseZero(t *testing.T) {
	c := newCLI(t)
	conf := filepath.Join(t.TempDir(), "gitmem.toml")
	if err := os.WriteFile(conf, []byte("[serve]\nmax-open-proposals = 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	checkServeRefusals(t, c, []serveRefusal{
		{nil, []string{"serve", "--max-conns", "0"}, `invalid argument "0" for "--max-conns" flag: must be more than 0`},
		{nil, []string{"serve", "--max-open-proposals-per-key=-1"}, `"--max-open-proposals-per-key" flag: must be more than 0`},
		{nil, []string{"serve", "--idle-timeout", "0s"}, `"--idle-timeout" flag: must be more than 0`},
		{nil, []string{"serve", "--git-timeout", "10"}, `"--git-timeout" flag: not a duration (like 30s, 2m or 1h)`},
		{[]string{"GITMEM_MAX_REQUESTS=-2"}, []string{"serve"}, "GITMEM_MAX_REQUESTS: must be more than 0"},
		{nil, []string{"--config", conf, "serve"}, "[serve] max-open-proposals: must be more than 0"},
	})
}

// serveRefusal is a gitmem serve run in env with args, which must be refused with want.
type serveRefusal struct {
	env  []string
	args []string
	want string
}

// checkServeRefusals runs each serve of cases and checks that it exits 2 with its message,
// and that none made its data directory.
func checkServeRefusals(t *testing.T, c *cli, cases []serveRefusal) {
	t.Helper()
	for _, tc := range cases {
		_, stderr, code := c.runEnv(append(os.Environ(), tc.env...), "", append(tc.args, "--addr", "127.0.0.1:0")...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v %v: exit %d, %s", tc.env, tc.args, code, stderr)
		}
	}
	if _, err := os.Stat(c.data); !os.IsNotExist(err) {
		t.Errorf("a refused serve made its data directory: %v", err)
	}
}

// TestServeLimits: the timeouts and caps of gitmem serve, set short by its flags, cut off
// clients that hold connections: a body sent a byte at a time, an idle keep-alive
// connection, a connection answered 401, more connections or requests than the caps.
func TestServeLimits(t *testing.T) {
	t.Run("slow body", func(t *testing.T) {
		c := newCLI(t)
		_, _, url := startServe(t, c, "--body-timeout", "500ms")
		conn := dial(t, url)
		start := time.Now()
		conn.write("POST /v1/memory_stores HTTP/1.1\r\nHost: " + strings.TrimPrefix(url, "http://") +
			"\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{")
		go func() { // a byte every 100 ms: the body would take 20 s
			for range 200 {
				time.Sleep(100 * time.Millisecond)
				if conn.write(" ") != nil {
					return
				}
			}
		}()
		resp, body, err := conn.response(5 * time.Second)
		if err != nil {
			t.Fatalf("a body sent a byte at a time was not cut off: %v after %v", err, time.Since(start))
		}
		if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(body, "did not arrive within 500ms") {
			t.Errorf("slow body: %d %s", resp.StatusCode, body)
		}
		if closed, _ := conn.closedWithin(2 * time.Second); !closed {
			t.Error("the connection of a slow body stayed open")
		}
		if took := time.Since(start); took < 400*time.Millisecond || took > 4*time.Second {
			t.Errorf("cut off after %v, want about 500ms", took)
		}
	})

	t.Run("idle keep-alive", func(t *testing.T) {
		c := newCLI(t)
		_, _, url := startServe(t, c, "--idle-timeout", "500ms")
		conn := dial(t, url)
		conn.write("GET /v1/memory_stores HTTP/1.1\r\nHost: " + strings.TrimPrefix(url, "http://") + "\r\n\r\n")
		if resp, body, err := conn.response(5 * time.Second); err != nil || resp.StatusCode != 200 {
			t.Fatalf("list stores: %v %v %s", resp, err, body)
		}
		closed, after := conn.closedWithin(5 * time.Second)
		if !closed || after < 300*time.Millisecond {
			t.Errorf("idle keep-alive connection: closed %v after %v, want closed after about 500ms", closed, after)
		}
	})

	t.Run("401 closes", func(t *testing.T) {
		c := newCLI(t)
		createKey(t, c, "only")
		_, _, url := startServe(t, c)
		host := strings.TrimPrefix(url, "http://")
		for _, req := range []string{
			"GET /v1/memory_stores HTTP/1.1\r\nHost: " + host + "\r\n\r\n",
			"GET /v1/memory_stores HTTP/1.1\r\nHost: " + host + "\r\nx-api-key: gitmem_wrong\r\n\r\n",
			"POST /mcp?store=memstore_x HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
			"GET /git/memstore_x.git/info/refs?service=git-upload-pack HTTP/1.1\r\nHost: " + host + "\r\n\r\n",
		} {
			conn := dial(t, url)
			conn.write(req)
			resp, _, err := conn.response(5 * time.Second)
			if err != nil || resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("%q: %v %v, want 401", req, resp, err)
			}
			if closed, _ := conn.closedWithin(2 * time.Second); !closed {
				t.Errorf("%q: the connection stayed open after its 401", req)
			}
		}
	})

	t.Run("connection cap", func(t *testing.T) {
		c := newCLI(t)
		_, _, url := startServe(t, c, "--max-conns", "2")
		// Connections that serve a request (here, one whose body is still to come) keep their
		// place; one that waits for a request would give it up to a new one.
		held := []*rawConn{dial(t, url), dial(t, url)}
		for _, h := range held {
			h.write("POST /v1/memory_stores HTTP/1.1\r\nHost: " + strings.TrimPrefix(url, "http://") +
				"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
		}
		time.Sleep(100 * time.Millisecond) // both accepted, their handlers wait for the bodies
		done := make(chan int, 1)
		go func() {
			resp, err := http.Get(url + "/v1/memory_stores")
			if err != nil {
				done <- 0
				return
			}
			resp.Body.Close()
			done <- resp.StatusCode
		}()
		select {
		case status := <-done:
			t.Fatalf("a third connection was served (%d) while the cap of 2 was held", status)
		case <-time.After(500 * time.Millisecond):
		}
		held[0].conn.Close()
		select {
		case status := <-done:
			if status != 200 {
				t.Errorf("queued request: %d", status)
			}
		case <-time.After(5 * time.Second):
			t.Error("the queued connection was not served once a connection closed")
		}
	})

	t.Run("request cap", func(t *testing.T) {
		c := newCLI(t)
		_, _, url := startServe(t, c, "--max-requests", "1")
		held := dial(t, url)
		held.write("POST /v1/memory_stores HTTP/1.1\r\nHost: " + strings.TrimPrefix(url, "http://") +
			"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
		time.Sleep(200 * time.Millisecond) // its handler waits for the body
		resp, err := http.Get(url + "/v1/memory_stores")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "1 requests at once") || resp.Header.Get("Retry-After") == "" {
			t.Errorf("over the request cap: %d %s %v", resp.StatusCode, body, resp.Header)
		}
		held.conn.Close()
		deadline := time.Now().Add(5 * time.Second)
		for {
			resp, err := http.Get(url + "/v1/memory_stores")
			if err == nil && resp.StatusCode == 200 {
				resp.Body.Close()
				break
			}
			if err == nil {
				resp.Body.Close()
			}
			if time.Now().After(deadline) {
				t.Fatalf("requests still refused after the held one ended: %v %v", resp, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}
