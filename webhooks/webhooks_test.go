package webhooks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/httpapi"
	"github.com/gitmem/gitmem/webhooks"
)

// env is the real server with webhooks, and a dispatcher that can be stopped and started
// again (as gitmem serve is).
type env struct {
	t    *testing.T
	url  string
	data *gitstore.DataDir
	keys *apikeys.Keys
	reg  *webhooks.Registry
	stop func()
}

// start starts the server; with dispatch, a dispatcher too (the refusal tests run none, so
// that no webhook of theirs is ever sent anywhere).
func start(t *testing.T, allowPrivate, dispatch bool) *env {
	dir := t.TempDir()
	d, err := gitstore.Open(context.Background(), dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	keys, _ := apikeys.Open(dir)
	srv := httpapi.New(d, keys, httpapi.Options{})
	reg := webhooks.Open(d.Layout())
	reg.AllowPrivate = allowPrivate
	srv.EnableWebhooks(reg)
	hs := httptest.NewServer(srv)
	e := &env{t: t, url: hs.URL, data: d, keys: keys, reg: reg, stop: func() {}}
	if dispatch {
		e.run()
	}
	t.Cleanup(func() { e.stop(); hs.Close(); d.Close() })
	return e
}

// run starts a dispatcher; stop stops it and waits until it has.
func (e *env) run() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	d := &webhooks.Dispatcher{Data: e.data, Registry: e.reg, Payload: httpapi.EventPayload,
		Backoff: func(int) time.Duration { return 20 * time.Millisecond }, Timeout: 2 * time.Second}
	go func() { d.Run(ctx); close(done) }()
	e.stop = func() { cancel(); <-done }
}

func (e *env) api(method, path, key string, body any, out any) int {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, e.url+path, rd)
	if body != nil {
		req.Header.Set("content-type", "application/json")
	}
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil {
		json.Unmarshal(raw, out)
	}
	return resp.StatusCode
}

func (e *env) write(key, store, path string) {
	e.t.Helper()
	if st := e.api("POST", "/v1/memory_stores/"+store+"/memories", key, map[string]string{"path": path, "content": path}, nil); st != 200 {
		e.t.Fatalf("write %s: %d", path, st)
	}
}

// receiver is a webhook endpoint that verifies every delivery with the Standard Webhooks
// library (an implementation of the signature independent of gitmem's), fails the first
// failFirst of them, and records the events it took.
type receiver struct {
	*httptest.Server
	mu        sync.Mutex
	secret    string
	failFirst int
	calls     int
	events    []map[string]any
	seen      map[string]bool // webhook-ids taken: a redelivery is acknowledged and dropped
	bad       []string
}

func newReceiver(t *testing.T, failFirst int) *receiver {
	r := &receiver{failFirst: failFirst, seen: map[string]bool{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.calls++
		wh, err := standardwebhooks.NewWebhook(r.secret)
		if err == nil {
			err = wh.Verify(body, req.Header)
		}
		if err != nil {
			r.bad = append(r.bad, err.Error())
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.calls <= r.failFirst {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		// At least once: an event whose answer was lost (gitmem stopped while it was on its
		// way) comes again, and a receiver tells it by its webhook-id, as the specification says.
		id := req.Header.Get("webhook-id")
		if r.seen[id] {
			return
		}
		r.seen[id] = true
		var ev map[string]any
		json.Unmarshal(body, &ev)
		ev["webhook-id"] = id
		r.events = append(r.events, ev)
	}))
	t.Cleanup(r.Close)
	return r
}

// wait waits until the receiver has taken n events, and returns them.
func (r *receiver) wait(t *testing.T, n int) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r.mu.Lock()
		got := append([]map[string]any(nil), r.events...)
		bad := r.bad
		r.mu.Unlock()
		if len(bad) > 0 {
			t.Fatalf("deliveries that failed verification: %v", bad)
		}
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("the receiver took %d of %d events", len(got), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type hookJSON struct {
	ID, Secret, URL string
	Events          []string
}

// TestWebhookDelivery: a receiver that fails 5 times and then recovers gets every event, in
// order, each signed as the specification says; the delivery log says how it went.
func TestWebhookDelivery(t *testing.T) {
	e := start(t, true, true)
	var store struct{ ID string }
	e.api("POST", "/v1/memory_stores", "", map[string]string{"name": "hooked"}, &store)
	e.write("", store.ID, "/before.md") // before the webhook: not delivered
	r := newReceiver(t, 5)
	var h hookJSON
	if st := e.api("POST", "/v1/webhooks", "", map[string]any{"url": r.URL + "/hook"}, &h); st != 200 || !strings.HasPrefix(h.Secret, "whsec_") {
		t.Fatalf("create: %d %+v", st, h)
	}
	r.mu.Lock()
	r.secret = h.Secret
	r.mu.Unlock()
	for _, p := range []string{"/a.md", "/b.md", "/c.md"} {
		e.write("", store.ID, p)
	}
	got := r.wait(t, 3)
	for i, p := range []string{"/a.md", "/b.md", "/c.md"} {
		if got[i]["path"] != p || got[i]["type"] != "memory.created" || got[i]["webhook-id"] != got[i]["memory_version_id"] {
			t.Fatalf("event %d: %v", i, got[i])
		}
	}
	// The secret is shown once: never again in a read or a list.
	var again hookJSON
	e.api("GET", "/v1/webhooks/"+h.ID, "", nil, &again)
	if again.Secret != "" || again.URL != r.URL+"/hook" {
		t.Fatalf("read: %+v", again)
	}
	// The receiver has the last event before the dispatcher has its answer and logs it.
	var log struct {
		Data []webhooks.Delivery `json:"data"`
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		e.api("GET", "/v1/webhooks/"+h.ID+"/deliveries", "", nil, &log)
		if len(log.Data) >= 3 || time.Now().After(deadline) {
			break
		}
	}
	if len(log.Data) != 3 || !log.Data[2].Delivered || log.Data[2].Attempts != 6 || log.Data[0].Attempts != 1 || log.Data[0].Status != 200 {
		t.Fatalf("delivery log: %+v", log.Data)
	}
	// A filter by event type, and an update that turns the webhook off.
	if st := e.api("POST", "/v1/webhooks/"+h.ID, "", map[string]any{"events": []string{"memory.deleted"}}, nil); st != 200 {
		t.Fatalf("update: %d", st)
	}
	e.write("", store.ID, "/d.md")
	var m struct{ ID string }
	e.api("POST", "/v1/memory_stores/"+store.ID+"/memories", "", map[string]string{"path": "/e.md", "content": "e"}, &m)
	e.api("DELETE", "/v1/memory_stores/"+store.ID+"/memories/"+m.ID, "", nil, nil)
	got = r.wait(t, 4)
	if got[3]["type"] != "memory.deleted" || got[3]["path"] != "/e.md" {
		t.Fatalf("filtered event: %v", got[3])
	}
	if st := e.api("DELETE", "/v1/webhooks/"+h.ID, "", nil, nil); st != 200 {
		t.Fatalf("delete: %d", st)
	}
	if st := e.api("GET", "/v1/webhooks/"+h.ID, "", nil, nil); st != 404 {
		t.Fatalf("after delete: %d", st)
	}
}

// TestWebhookSurvivesRestart: events written while the dispatcher is down (gitmem stopped)
// are delivered after it starts again, in order, none lost.
func TestWebhookSurvivesRestart(t *testing.T) {
	e := start(t, true, true)
	var store struct{ ID string }
	e.api("POST", "/v1/memory_stores", "", map[string]string{"name": "durable"}, &store)
	r := newReceiver(t, 0)
	var h hookJSON
	e.api("POST", "/v1/webhooks", "", map[string]any{"url": r.URL, "memory_store_id": store.ID}, &h)
	r.mu.Lock()
	r.secret = h.Secret
	r.mu.Unlock()
	e.write("", store.ID, "/1.md")
	r.wait(t, 1)
	e.stop()
	for _, p := range []string{"/2.md", "/3.md", "/4.md"} {
		e.write("", store.ID, p)
	}
	e.run()
	got := r.wait(t, 4)
	for i, p := range []string{"/1.md", "/2.md", "/3.md", "/4.md"} {
		if got[i]["path"] != p {
			t.Fatalf("event %d after a restart: %v", i, got[i]["path"])
		}
	}
}

// TestWebhookRefusals: keys, stores and addresses are checked.
func TestWebhookRefusals(t *testing.T) {
	e := start(t, false, false)
	admin, _ := keyOf(t, e, "admin", apikeys.ReadWrite, "")
	var mine, theirs struct{ ID string }
	e.api("POST", "/v1/memory_stores", admin, map[string]string{"name": "mine"}, &mine)
	e.api("POST", "/v1/memory_stores", admin, map[string]string{"name": "theirs"}, &theirs)
	reader, _ := keyOf(t, e, "reader", apikeys.ReadOnly, "")
	limited, _ := keyOf(t, e, "limited", apikeys.ReadWrite, mine.ID)
	for _, tc := range []struct {
		key    string
		body   map[string]any
		status int
	}{
		{"", map[string]any{"url": "https://example.com/h"}, 401},
		{reader, map[string]any{"url": "https://example.com/h"}, 403},
		{limited, map[string]any{"url": "https://example.com/h", "memory_store_id": theirs.ID}, 403},
		{limited, map[string]any{"url": "https://example.com/h", "memory_store_id": "memstore_01M83RXJE06891D7CSNGD1TFB7"}, 403},
		{admin, map[string]any{"url": "http://127.0.0.1:9/h"}, 400},
		{admin, map[string]any{"url": "http://localhost/h"}, 400},
		{admin, map[string]any{"url": "http://10.1.2.3/h"}, 400},
		{admin, map[string]any{"url": "http://169.254.169.254/latest"}, 400},
		{admin, map[string]any{"url": "http://[::1]/h"}, 400},
		{admin, map[string]any{"url": "http://[64:ff9b::7f00:1]/h"}, 400},  // NAT64 of 127.0.0.1
		{admin, map[string]any{"url": "http://[64:ff9b::a01:203]/h"}, 400}, // NAT64 of 10.1.2.3
		{admin, map[string]any{"url": "http://[64:ff9b:1::1]/h"}, 400},
		{admin, map[string]any{"url": "http://[::a01:203]/h"}, 400},
		{admin, map[string]any{"url": "http://no-such-host.invalid/h"}, 400},
		{admin, map[string]any{"url": "ftp://example.com/h"}, 400},
		{admin, map[string]any{"url": "https://user:pw@example.com/h"}, 400},
		{admin, map[string]any{"url": "https://203.0.113.9/h", "events": []string{"memory.exploded"}}, 400},
		{admin, map[string]any{"url": "https://203.0.113.9/h", "nope": 1}, 400},
		{admin, map[string]any{"url": "https://203.0.113.9/h", "memory_store_id": "memstore_01M83RXJE06891D7CSNGD1TFB7"}, 404},
	} {
		var out map[string]any
		if st := e.api("POST", "/v1/webhooks", tc.key, tc.body, &out); st != tc.status {
			t.Errorf("create %v: %d, want %d (%v)", tc.body, st, tc.status, out)
		}
	}
	var h hookJSON
	if st := e.api("POST", "/v1/webhooks", limited, map[string]any{"url": "https://203.0.113.9/h"}, &h); st != 200 {
		t.Fatalf("a store-limited key's webhook: %d", st)
	}
	var other hookJSON
	e.api("POST", "/v1/webhooks", admin, map[string]any{"url": "https://203.0.113.9/all"}, &other)
	var list struct{ Data []hookJSON }
	e.api("GET", "/v1/webhooks", limited, nil, &list)
	if len(list.Data) != 1 || list.Data[0].ID != h.ID {
		t.Errorf("a store-limited key lists %+v", list.Data)
	}
	if st := e.api("GET", "/v1/webhooks/"+other.ID, limited, nil, nil); st != 404 {
		t.Errorf("a store-limited key reads another's webhook: %d", st)
	}
	if st := e.api("DELETE", "/v1/webhooks/"+other.ID, limited, nil, nil); st != 404 {
		t.Errorf("a store-limited key deletes another's webhook: %d", st)
	}
	if st := e.api("GET", "/v1/webhooks", reader, nil, nil); st != 403 {
		t.Errorf("a read-only key lists webhooks: %d", st)
	}
}

func keyOf(t *testing.T, e *env, name string, access apikeys.Access, store string) (string, string) {
	k, secret, err := e.keys.Create(name, access, store)
	if err != nil {
		t.Fatal(err)
	}
	return secret, k.ID
}

// TestSignMatchesTheSpecification: a signature made by Sign verifies with the library.
func TestSignMatchesTheSpecification(t *testing.T) {
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	ts := time.Now().Unix()
	sig, err := webhooks.Sign(secret, "msg_1", ts, []byte(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	wh, _ := standardwebhooks.NewWebhook(secret)
	h := http.Header{}
	h.Set("webhook-id", "msg_1")
	h.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	h.Set("webhook-signature", sig)
	if err := wh.Verify([]byte(`{"a":1}`), h); err != nil {
		t.Fatalf("verify: %v", err)
	}
	if err := wh.Verify([]byte(`{"a":2}`), h); err == nil {
		t.Fatal("a changed body verified")
	}
}

// TestStoreKeyLeavesRoomForOthers: a key limited to one store cannot take every webhook of
// the data directory. The registry keeps at most 100 for all stores together, and a
// store-limited key could create all 100 for its store: no other key, the operator's
// included, could create one until they were deleted (which only a key of that store, or
// an unlimited one, sees to do).
func TestStoreKeyLeavesRoomForOthers(t *testing.T) {
	e := start(t, false, false)
	admin, _ := keyOf(t, e, "admin", apikeys.ReadWrite, "")
	var mine, theirs struct{ ID string }
	e.api("POST", "/v1/memory_stores", admin, map[string]string{"name": "mine"}, &mine)
	e.api("POST", "/v1/memory_stores", admin, map[string]string{"name": "theirs"}, &theirs)
	limited, _ := keyOf(t, e, "limited", apikeys.ReadWrite, mine.ID)
	made := 0
	for range webhooks.MaxHooks {
		if st := e.api("POST", "/v1/webhooks", limited, map[string]any{"url": "https://203.0.113.9/h"}, nil); st != 200 {
			break
		}
		made++
	}
	t.Logf("the store-limited key made %d webhooks", made)
	var out map[string]any
	if st := e.api("POST", "/v1/webhooks", admin, map[string]any{"url": "https://203.0.113.9/t", "memory_store_id": theirs.ID}, &out); st != 200 {
		t.Fatalf("another store's webhook after the store-limited key made %d: %d %v", made, st, out)
	}
	if st := e.api("POST", "/v1/webhooks", admin, map[string]any{"url": "https://203.0.113.9/all"}, &out); st != 200 {
		t.Fatalf("a webhook of every store after the store-limited key made %d: %d %v", made, st, out)
	}
}
