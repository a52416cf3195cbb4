package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
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
	mustContain(t, "empty", c.ok("", "webhooks", "list"), "no webhooks")
}
