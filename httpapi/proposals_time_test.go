package httpapi

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitstore"
)

// TestProposalUpdatedAtFollowsWrites: a proposal's updated_at is no earlier than the last
// write to it, in the answers of GET one and of the list, while the server runs, after it
// stops and starts again, and after a crash (a copy of the data directory taken while the
// server ran) that came after writes of the restarted server. The versions' clock runs an hour ahead of the rest, so that a write tells
// from the proposal's opening to the millisecond.
func TestProposalUpdatedAtFollowsWrites(t *testing.T) {
	ctx := context.Background()
	var ahead atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	serve := func(dir string) (string, *apikeys.Keys, func()) {
		d, err := gitstore.Open(ctx, dir, gitstore.Options{Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		keys, err := apikeys.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		srv := New(d, keys, Options{})
		hs := httptest.NewServer(srv)
		return hs.URL, keys, func() { hs.Close(); srv.Close(); d.Close() }
	}
	dir := t.TempDir()
	url, keys, stop := serve(dir)
	_, rw, _ := keys.Create("person", apikeys.ReadWrite, "")
	_, agent, _ := keys.Create("agent", apikeys.Propose, "")
	h := func(key string) map[string]string { return map[string]string{"x-api-key": key} }
	_, body := rawRequest(t, "POST", url+"/v1/memory_stores", `{"name":"team"}`, h(rw))
	var store struct{ ID string }
	if json.Unmarshal([]byte(body), &store); store.ID == "" {
		t.Fatalf("store: %s", body)
	}
	write := func(url, path string) (prop string, last time.Time) {
		t.Helper()
		status, body, header := rawExchange(t, "POST", url+"/v1/memory_stores/"+store.ID+"/memories", `{"path":"`+path+`","content":"x"}`, h(agent))
		var mem memoryJSON
		if json.Unmarshal([]byte(body), &mem); status != 200 || header.Get(ProposalHeader) == "" {
			t.Fatalf("the agent's write of %s: %d %s", path, status, body)
		}
		var version struct {
			CreatedAt time.Time `json:"created_at"`
		}
		if status, body := rawRequest(t, "GET", url+"/v1/memory_stores/"+store.ID+"/memory_versions/"+mem.MemoryVersionID, "", h(agent)); json.Unmarshal([]byte(body), &version) != nil || status != 200 {
			t.Fatalf("the version of %s: %d %s", path, status, body)
		}
		return header.Get(ProposalHeader), version.CreatedAt
	}
	prop, _ := write(url, "/a.md")
	check := func(when, url string, last time.Time) {
		t.Helper()
		var one struct {
			UpdatedAt time.Time `json:"updated_at"`
		}
		var list struct {
			Data []struct {
				ID        string    `json:"id"`
				UpdatedAt time.Time `json:"updated_at"`
			} `json:"data"`
		}
		base := url + "/v1/memory_stores/" + store.ID + "/proposals"
		if status, body := rawRequest(t, "GET", base+"/"+prop, "", h(rw)); status != 200 || json.Unmarshal([]byte(body), &one) != nil {
			t.Fatalf("%s: GET the proposal: %d %s", when, status, body)
		}
		if status, body := rawRequest(t, "GET", base, "", h(rw)); status != 200 || json.Unmarshal([]byte(body), &list) != nil || len(list.Data) != 1 || list.Data[0].ID != prop {
			t.Fatalf("%s: the list: %d %s", when, status, body)
		}
		if one.UpdatedAt.Before(last) || list.Data[0].UpdatedAt.Before(last) {
			t.Errorf("%s: updated_at %s (GET) and %s (the list); the last write was at %s", when, one.UpdatedAt, list.Data[0].UpdatedAt, last)
		}
	}

	ahead.Store(int64(time.Hour))
	_, last := write(url, "/b.md")
	check("while the server runs", url, last)
	stop()
	url, _, stop = serve(dir)
	check("after a restart", url, last)
	ahead.Store(int64(2 * time.Hour))
	_, last = write(url, "/c.md") // the fork opens again, in this server
	check("after a write in the restarted server", url, last)
	crashed := filepath.Join(t.TempDir(), "crashed")
	if err := os.CopyFS(crashed, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	stop()
	url, _, stop = serve(crashed)
	defer stop()
	check("after a crash", url, last)
}
