package webui_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/httpapi"
	"github.com/gitmem/gitmem/webhooks"
)

// TestWebhooksPage: the page shows each webhook with its delivery log (a receiver that
// recovered, one that keeps failing), to keys that may manage webhooks, and a key limited
// to a store only that store's.
func TestWebhooksPage(t *testing.T) {
	e := start(t)
	admin, _ := e.key("admin", apikeys.ReadWrite, "")
	a, b := e.store(admin, "alpha"), e.store(admin, "beta")
	limited, _ := e.key("beta-only", apikeys.ReadWrite, b)
	reader, _ := e.key("reader", apikeys.ReadOnly, "")

	var calls atomic.Int32
	flaky := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			w.WriteHeader(http.StatusBadGateway)
		}
	}))
	defer flaky.Close()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer down.Close()
	var hookA, hookB struct{ ID string }
	if st := e.api("POST", "/v1/webhooks", admin, map[string]any{"url": flaky.URL + "/a", "memory_store_id": a}, &hookA); st != 200 {
		t.Fatalf("webhook a: %d", st)
	}
	if st := e.api("POST", "/v1/webhooks", limited, map[string]any{"url": down.URL + "/b", "memory_store_id": b, "events": []string{"memory.created"}}, &hookB); st != 200 {
		t.Fatalf("webhook b: %d", st)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	d := &webhooks.Dispatcher{Data: e.data, Registry: e.hooks, Payload: httpapi.EventPayload,
		Backoff: func(int) time.Duration { return 10 * time.Millisecond }}
	go func() { d.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	e.write(admin, a, "/a.md", "a")
	e.write(admin, b, "/b.md", "b")
	for deadline := time.Now().Add(20 * time.Second); ; {
		da, _ := e.hooks.Deliveries(hookA.ID)
		db, _ := e.hooks.Deliveries(hookB.ID)
		if len(da) == 1 && da[0].Delivered && len(db) == 1 && db[0].Attempts >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries: %+v / %+v", da, db)
		}
		time.Sleep(20 * time.Millisecond)
	}

	br := e.browser()
	br.signIn(admin)
	p := br.get("/ui/webhooks")
	for _, want := range []string{flaky.URL + "/a", down.URL + "/b", "memory.created", "delivered (200)", "the receiver answered 503", "failing", ">alpha<", ">beta<"} {
		if p.status != 200 || !strings.Contains(p.body, want) {
			t.Fatalf("webhooks page (%d) lacks %q: %.3000s", p.status, want, p.body)
		}
	}
	if !strings.Contains(br.get("/ui/").body, `href="/ui/webhooks"`) {
		t.Error("the nav has no link to the webhooks page")
	}

	lim := e.browser()
	lim.signIn(limited)
	if p := lim.get("/ui/webhooks"); p.status != 200 || strings.Contains(p.body, flaky.URL) || !strings.Contains(p.body, down.URL) {
		t.Fatalf("a key limited to beta (%d): %.2000s", p.status, p.body)
	}
	ro := e.browser()
	ro.signIn(reader)
	if p := ro.get("/ui/webhooks"); p.status != http.StatusForbidden {
		t.Fatalf("a read-only key: %d", p.status)
	}
	if strings.Contains(ro.get("/ui/").body, `href="/ui/webhooks"`) {
		t.Error("a read-only key sees a link to the webhooks page")
	}
	if p := e.browser().get("/ui/webhooks"); p.status != http.StatusSeeOther {
		t.Fatalf("signed out: %d", p.status)
	}
}

// TestUIWritesAreEvents: a memory made in the UI is an event on the store's stream, by the
// signed-in key.
func TestUIWritesAreEvents(t *testing.T) {
	e := start(t)
	admin, adminID := e.key("admin", apikeys.ReadWrite, "")
	st := e.store(admin, "notes")
	req, _ := http.NewRequest("GET", e.url+"/v1/memory_stores/"+st+"/events?after=now", nil)
	req.Header.Set("x-api-key", admin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("events: %v %v", resp, err)
	}
	defer resp.Body.Close()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	b := e.browser()
	b.signIn(admin)
	if p := b.submit("/ui/stores/"+st+"/new", "/ui/stores/"+st+"/memories", url.Values{"path": {"/from-ui.md"}, "content": {"typed"}}); p.status != http.StatusSeeOther {
		t.Fatalf("create in the UI: %d", p.status)
	}
	for timeout := time.After(10 * time.Second); ; {
		select {
		case l := <-lines:
			if strings.HasPrefix(l, "data: ") {
				if !strings.Contains(l, `"path":"/from-ui.md"`) || !strings.Contains(l, adminID) {
					t.Fatalf("the UI write's event: %s", l)
				}
				return
			}
		case <-timeout:
			t.Fatal("no event for the UI write")
		}
	}
}
