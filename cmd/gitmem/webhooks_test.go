package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestWebhooksCLI: webhooks made on the data directory and through a running server; the
// server delivers a change to a receiver on loopback (allowed by a serve flag); exit codes of
// the refusals.
func TestWebhooksCLI(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "notes")
	// On the data directory: a receiver elsewhere, turned off at once (nothing here sends it).
	var h struct{ ID, Secret string }
	if err := json.Unmarshal([]byte(c.ok("", "webhooks", "create", "https://203.0.113.9/h", "--store", "notes", "--json")), &h); err != nil || !strings.HasPrefix(h.Secret, "whsec_") {
		t.Fatalf("create --json: %+v %v", h, err)
	}
	mustContain(t, "update", c.ok("", "webhooks", "update", h.ID, "--disable"), "disabled: true")
	mustContain(t, "list", c.ok("", "webhooks", "list"), h.ID, "off")
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"webhooks", "create", "ftp://example.com/h"}, exitUsage},
		{[]string{"webhooks", "create", "http://127.0.0.1:9/h"}, exitUsage}, // private: refused without the serve flag
		{[]string{"webhooks", "show", "whk_nope"}, exitNotFound},
		{[]string{"webhooks", "update", h.ID}, exitUsage},
		{[]string{"webhooks", "create", "https://203.0.113.9/h", "--store", "nope"}, exitNotFound},
	} {
		if _, stderr, code := c.run("", tc.args...); code != tc.code {
			t.Errorf("gitmem %v: exit %d, want %d (%s)", tc.args, code, tc.code, stderr)
		}
	}
	c.ok("", "webhooks", "delete", h.ID)

	// Through a server that may deliver to loopback: a change reaches the receiver.
	var mu sync.Mutex
	var got []string
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.Header.Get("webhook-signature")+" "+string(body))
		mu.Unlock()
	}))
	defer recv.Close()
	serveWith(t, c, []string{"--allow-private-webhooks"})
	if err := json.Unmarshal([]byte(c.ok("", "webhooks", "create", recv.URL, "--store", "notes", "--json")), &h); err != nil {
		t.Fatal(err)
	}
	c.ok("hello\n", "put", "notes", "/hooked.md")
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the receiver got nothing")
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	if !strings.HasPrefix(got[0], "v1,") || !strings.Contains(got[0], `"path":"/hooked.md"`) {
		t.Fatalf("delivery: %s", got[0])
	}
	mu.Unlock()
	for time.Now().Before(deadline) && !strings.Contains(c.ok("", "webhooks", "deliveries", h.ID), "delivered") {
		time.Sleep(50 * time.Millisecond)
	}
	mustContain(t, "deliveries", c.ok("", "webhooks", "deliveries", h.ID), "memory.created", "200 delivered")
	mustContain(t, "show", c.ok("", "webhooks", "show", h.ID), recv.URL)
	c.ok("", "webhooks", "delete", h.ID)
	mustContain(t, "empty", c.none("", "webhooks", "list"), "no webhooks")
}

// TestWebhookKilledMidDelivery: gitmem killed (SIGKILL) while a delivery is in flight, with
// more events not sent yet, loses nothing: started again, it delivers every event, in order;
// the one in flight comes again (at least once), and the receiver tells it by its id.
func TestWebhookKilledMidDelivery(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "notes")
	var mu sync.Mutex
	var taken []string // paths, in the order first taken
	seen := map[string]bool{}
	calls := 0
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct{ Path string }
		json.NewDecoder(r.Body).Decode(&ev)
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n == 3 {
			<-r.Context().Done() // held until gitmem dies: the delivery is in flight
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if id := r.Header.Get("webhook-id"); !seen[id] {
			seen[id] = true
			taken = append(taken, ev.Path)
		}
	}))
	defer recv.Close()
	first, _, _ := startServe(t, c, "--allow-private-webhooks")
	var h struct{ ID string }
	if err := json.Unmarshal([]byte(c.ok("", "webhooks", "create", recv.URL, "--store", "notes", "--json")), &h); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := 1; i <= 8; i++ {
		p := fmt.Sprintf("/%02d.md", i)
		c.ok(p, "put", "notes", p)
		want = append(want, p)
	}
	waitUntil := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			mu.Lock()
			done := ok()
			mu.Unlock()
			if done {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("waited for %s: taken %v after %d calls", what, taken, calls)
			}
		}
	}
	waitUntil("the third delivery", func() bool { return calls >= 3 })
	if err := first.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	mu.Lock()
	if len(taken) != 2 {
		t.Fatalf("before the kill: %v", taken)
	}
	mu.Unlock()

	startServe(t, c, "--allow-private-webhooks")
	waitUntil("every event after the restart", func() bool { return len(taken) == len(want) })
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(taken, want) {
		t.Fatalf("taken %v, want %v", taken, want)
	}
	if calls < len(want)+1 {
		t.Errorf("%d calls: the delivery in flight was not sent again", calls)
	}
}
