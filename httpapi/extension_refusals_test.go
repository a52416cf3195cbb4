package httpapi

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitstore"
)

// TestExtensionRoutesRefuse: the routes added for the CLI's client mode (version, expire,
// sync) refuse what every route refuses: no key, a read-only key where they write, a key of
// another store, bodies that are not JSON or hold unknown or mistyped fields; and a refused
// request changes nothing (the sync never runs).
func TestExtensionRoutesRefuse(t *testing.T) {
	ctx := context.Background()
	var synced []string
	ts := startServer(t, Options{}, func(s *Server) {
		s.EnableSync(func(_ context.Context, st *gitstore.Store, remote string) (any, []error, error) {
			synced = append(synced, st.ID()+" "+remote)
			return []any{}, nil, nil
		})
	})
	_, rw, err := ts.keys.Create("rw", apikeys.ReadWrite, "")
	if err != nil {
		t.Fatal(err)
	}
	_, ro, _ := ts.keys.Create("ro", apikeys.ReadOnly, "")
	store, err := ts.data.CreateStore(ctx, gitstore.CreateStoreInput{Name: "s", Actor: LocalUser})
	if err != nil {
		t.Fatal(err)
	}
	other, _ := ts.data.CreateStore(ctx, gitstore.CreateStoreInput{Name: "other", Actor: LocalUser})
	_, otherOnly, _ := ts.keys.Create("other only", apikeys.ReadWrite, other.ID())
	base := ts.url + "/v1/memory_stores/" + store.ID()
	key := func(k string) map[string]string { return map[string]string{"x-api-key": k} }

	for _, tc := range []struct {
		name, method, url, body string
		header                  map[string]string
		status                  int
		typ                     string
	}{
		{"version without a key", "GET", ts.url + "/v1/version", "", nil, 401, "authentication_error"},
		{"expire without a key", "POST", base + "/expire", `{"dry_run":true}`, nil, 401, "authentication_error"},
		{"expire with a read-only key", "POST", base + "/expire", `{"dry_run":true}`, key(ro), 403, "permission_error"},
		{"expire with another store's key", "POST", base + "/expire", `{"dry_run":true}`, key(otherOnly), 403, "permission_error"},
		{"expire with an unknown field", "POST", base + "/expire", `{"dry_run":true,"force":1}`, key(rw), 400, "invalid_request_error"},
		{"expire with dry_run not a boolean", "POST", base + "/expire", `{"dry_run":"yes"}`, key(rw), 400, "invalid_request_error"},
		{"expire of an unknown store", "POST", ts.url + "/v1/memory_stores/memstore_01NOSUCHSTORE0000000000000/expire", `{}`, key(rw), 404, "not_found_error"},
		{"sync without a key", "POST", base + "/sync", `{}`, nil, 401, "authentication_error"},
		{"sync with a read-only key", "POST", base + "/sync", `{}`, key(ro), 403, "permission_error"},
		{"sync with another store's key", "POST", base + "/sync", `{}`, key(otherOnly), 403, "permission_error"},
		{"sync with an unknown field", "POST", base + "/sync", `{"remote":"a","url":"file:///etc"}`, key(rw), 400, "invalid_request_error"},
		{"sync with remote not a string", "POST", base + "/sync", `{"remote":7}`, key(rw), 400, "invalid_request_error"},
	} {
		status, body := rawRequest(t, tc.method, tc.url, tc.body, tc.header)
		if status != tc.status || !strings.Contains(body, `"type":"`+tc.typ+`"`) {
			t.Errorf("%s: %d %s, want %d %s", tc.name, status, body, tc.status, tc.typ)
		}
	}
	// A body that is not JSON is refused before anything runs.
	req, _ := http.NewRequest("POST", base+"/sync", strings.NewReader(`remote=a`))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("x-api-key", rw)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("sync with a form body: %v %v", resp.StatusCode, err)
	}
	if len(synced) != 0 {
		t.Errorf("refused requests ran a sync: %v", synced)
	}

	// What is allowed works, with the key's reach.
	if status, body := rawRequest(t, "GET", ts.url+"/v1/version", "", key(ro)); status != 200 || !strings.Contains(body, `"version"`) {
		t.Errorf("version with a key: %d %s", status, body)
	}
	if status, body := rawRequest(t, "POST", base+"/expire", `{"dry_run":true}`, key(rw)); status != 200 || !strings.Contains(body, `"memory_store_expire"`) {
		t.Errorf("expire: %d %s", status, body)
	}
	if status, body := rawRequest(t, "POST", base+"/sync", `{"remote":"origin"}`, key(rw)); status != 200 || len(synced) != 1 || synced[0] != store.ID()+" origin" {
		t.Errorf("sync: %d %s, ran %v", status, body, synced)
	}
}
