package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/packages/respjson"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/secrets"
	"github.com/gitmem/gitmem/secrets/secrettest"
)

// newPolicyStore creates a store over the SDK with a policy sent as gitmem's extra body
// field, and returns its id.
func newPolicyStore(t *testing.T, c anthropic.Client, policy map[string]any) string {
	t.Helper()
	store, err := c.Beta.MemoryStores.New(context.Background(), anthropic.BetaMemoryStoreNewParams{Name: gitstore.NewID("hygiene_", time.Now())},
		option.WithJSONSet("policy", policy))
	if err != nil {
		t.Fatal(err)
	}
	return store.ID
}

func TestSDKWritesApplyTheSecretsPolicy(t *testing.T) {
	ctx := context.Background()
	ts := startServer(t, Options{})
	c := ts.client()
	mem := c.Beta.MemoryStores.Memories
	for _, mode := range []string{"reject", "redact", "off"} {
		storeID := newPolicyStore(t, c, map[string]any{"secrets": mode})
		seed, err := mem.New(ctx, storeID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/seed.md", Content: anthropic.String("seed")})
		if err != nil {
			t.Fatal(err)
		}
		for _, sample := range secrettest.Samples() {
			for _, way := range []string{"create", "update"} {
				t.Run(mode+"/"+way+"/"+sample.Name, func(t *testing.T) {
					var m *anthropic.BetaManagedAgentsMemory
					var err error
					if way == "create" {
						m, err = mem.New(ctx, storeID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/" + sample.Name + ".md",
							Content: anthropic.String(sample.Content), View: anthropic.BetaManagedAgentsMemoryViewFull})
					} else {
						m, err = mem.Update(ctx, seed.ID, anthropic.BetaMemoryStoreMemoryUpdateParams{MemoryStoreID: storeID,
							Content: anthropic.String(sample.Content), View: anthropic.BetaManagedAgentsMemoryViewFull})
					}
					switch mode {
					case "reject":
						status, typ, e := apiErr(t, err)
						msg, _ := e["message"].(string)
						if status != 400 || typ != "invalid_request_error" || !strings.Contains(msg, sample.Kind+" at line") || strings.Contains(msg, sample.Secret) {
							t.Fatalf("%d %s %q: want a 400 naming %s and where, without the secret", status, typ, msg, sample.Kind)
						}
					case "redact":
						if err != nil {
							t.Fatal(err)
						}
						var red []redactionJSON
						json.Unmarshal([]byte(m.JSON.ExtraFields["redacted_secrets"].Raw()), &red)
						if len(red) != 1 || red[0] != (redactionJSON{Type: sample.Kind, Line: sample.Line, Column: sample.Column}) {
							t.Fatalf("redacted_secrets = %s, want one %s", m.JSON.ExtraFields["redacted_secrets"].Raw(), sample.Kind)
						}
						if strings.Contains(m.Content, sample.Secret) || !strings.Contains(m.Content, secrets.Marker(sample.Kind)) {
							t.Fatalf("content %q, want the marker in place of the secret", m.Content)
						}
					case "off":
						if err != nil || m.Content != sample.Content || m.JSON.ExtraFields["redacted_secrets"].Valid() {
							t.Fatalf("memory %+v, %v: want the content as sent", m, err)
						}
					}
				})
			}
		}
	}
}

func TestToolRouteAndMCPApplyTheSecretsPolicy(t *testing.T) {
	ctx := context.Background()
	ts := startServer(t, Options{})
	c := ts.client()
	for _, mode := range []string{"reject", "redact", "off"} {
		storeID := newPolicyStore(t, c, map[string]any{"secrets": mode})
		st, err := ts.data.Store(ctx, storeID)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := mcpConnect(t, ctx, ts.url+MCPPath+"?store="+storeID, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, sample := range secrettest.Samples() {
			path := "/memories/" + sample.Name + ".md"
			calls := []struct {
				way string
				run func() (string, bool)
			}{
				{"tools route create", func() (string, bool) {
					in, _ := json.Marshal(map[string]any{"command": "create", "path": path, "file_text": sample.Content})
					r := postTool(t, ts, storeID, "memory", in)
					return r.Content, r.IsError
				}},
				{"tools route str_replace", func() (string, bool) {
					in, _ := json.Marshal(map[string]any{"command": "str_replace", "path": path, "old_str": "seed", "new_str": sample.Content})
					r := postTool(t, ts, storeID, "memory", in)
					return r.Content, r.IsError
				}},
				{"tools route insert", func() (string, bool) {
					in, _ := json.Marshal(map[string]any{"command": "insert", "path": path, "insert_line": 0, "insert_text": sample.Content})
					r := postTool(t, ts, storeID, "memory", in)
					return r.Content, r.IsError
				}},
				{"mcp memory create", func() (string, bool) {
					return mcpCall(t, ctx, cs, "memory", map[string]any{"command": "create", "path": path, "file_text": sample.Content})
				}},
				{"mcp memory_write", func() (string, bool) {
					return mcpCall(t, ctx, cs, "memory_write", map[string]any{"path": path, "content": sample.Content})
				}},
			}
			call := calls[i%len(calls)] // every way meets several kinds of secret
			t.Run(mode+"/"+call.way+"/"+sample.Name, func(t *testing.T) {
				if strings.Contains(call.way, "create") {
					st.Delete(ctx, gitstore.DeleteInput{Path: strings.TrimPrefix(path, "/memories"), Actor: gitstore.SystemActor})
				} else if _, err := st.Write(ctx, gitstore.WriteInput{Path: strings.TrimPrefix(path, "/memories"), Content: "seed\n", Actor: gitstore.SystemActor}); err != nil {
					t.Fatal(err)
				}
				text, isErr := call.run()
				if strings.Contains(text, sample.Secret) && mode != "off" {
					t.Fatalf("the answer echoes the secret: %s", text)
				}
				if mode == "reject" && (!isErr || !strings.Contains(text, sample.Kind+" at line")) {
					t.Fatalf("answer %q (error %v), want an error naming %s", text, isErr, sample.Kind)
				}
				if mode == "redact" && (isErr || !strings.Contains(text, "redacted a secret before saving ("+sample.Kind)) {
					t.Fatalf("answer %q (error %v), want a note on the redaction", text, isErr)
				}
				m, err := st.GetByPath(ctx, strings.TrimPrefix(path, "/memories"), true)
				if stored := err == nil && strings.Contains(*m.Content, sample.Secret); stored != (mode == "off") {
					t.Fatalf("secret stored: %v under %s (answer %q, error %v)", stored, mode, text, isErr)
				}
			})
		}
	}
}

func TestStorePolicyAndUsageOverHTTP(t *testing.T) {
	ctx := context.Background()
	ts := startServer(t, Options{})
	c := ts.client()
	storeID := newPolicyStore(t, c, map[string]any{"max_memories": 2, "max_bytes": 8, "expire_after": "30d"})
	mem := c.Beta.MemoryStores.Memories
	for _, p := range []string{"/a", "/b"} {
		if _, err := mem.New(ctx, storeID, anthropic.BetaMemoryStoreMemoryNewParams{Path: p, Content: anthropic.String("1234")}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := mem.New(ctx, storeID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/c", Content: anthropic.String("")})
	status, _, e := apiErr(t, err)
	if msg, _ := e["message"].(string); status != 400 || !strings.Contains(msg, "3 memories, past its quota max_memories of 2") {
		t.Fatalf("write past the quota: %d %v", status, e)
	}
	got, err := c.Beta.MemoryStores.Get(ctx, storeID, anthropic.BetaMemoryStoreGetParams{})
	if err != nil {
		t.Fatal(err)
	}
	if u, p := got.JSON.ExtraFields["usage"].Raw(), got.JSON.ExtraFields["policy"].Raw(); u != `{"memories":2,"bytes":8}` ||
		p != `{"secrets":"reject","expire_after":"30d","max_memories":2,"max_bytes":8}` {
		t.Fatalf("usage %s, policy %s", u, p)
	}
	// An update changes the fields it names; null removes a quota or an expiry.
	updated, err := c.Beta.MemoryStores.Update(ctx, storeID, anthropic.BetaMemoryStoreUpdateParams{},
		option.WithJSONSet("policy", map[string]any{"secrets": "redact", "max_memories": nil, "expire_after": nil}))
	if err != nil {
		t.Fatal(err)
	}
	if p := updated.JSON.ExtraFields["policy"].Raw(); p != `{"secrets":"redact","expire_after":null,"max_memories":null,"max_bytes":8}` {
		t.Fatalf("policy after update: %s", p)
	}
	base := ts.url + "/v1/memory_stores/" + storeID
	for body, want := range map[string]string{
		`{"policy":{"secrets":"warn"}}`:      "secrets policy must be reject, redact or off",
		`{"policy":{"expire_after":"5m"}}`:   "expire_after must be at least 1h",
		`{"policy":{"expire_after":"soon"}}`: `duration "soon" is not a duration`,
		`{"policy":{"max_bytes":-1}}`:        "max_bytes must be 0 (no limit) or more",
		`{"policy":{"max_memories":"ten"}}`:  "policy.max_memories must be a whole number",
		`{"policy":{"quota":1}}`:             `unknown field "quota" in policy`,
		`{"policy":["reject"]}`:              `field "policy" must be an object`,
	} {
		status, resp := rawRequest(t, "POST", base, body, nil)
		var env struct{ Error struct{ Message string } }
		json.Unmarshal([]byte(resp), &env)
		if status != 400 || !strings.Contains(env.Error.Message, want) {
			t.Errorf("%s: %d %s, want 400 saying %q", body, status, resp, want)
		}
	}
	if again, _ := c.Beta.MemoryStores.Get(ctx, storeID, anthropic.BetaMemoryStoreGetParams{}); again.JSON.ExtraFields["policy"].Raw() != updated.JSON.ExtraFields["policy"].Raw() {
		t.Fatalf("a refused update changed the policy: %s", again.JSON.ExtraFields["policy"].Raw())
	}
}

// TestGitPushAppliesTheStorePolicy pushes with the real git a file holding each kind of
// secret, under each secrets policy, and files past the quotas.
func TestGitPushAppliesTheStorePolicy(t *testing.T) {
	g := startGitServer(t)
	for _, mode := range []string{"reject", "redact", "off"} {
		for _, sample := range secrettest.Samples() {
			t.Run(mode+"/"+sample.Name, func(t *testing.T) {
				t.Parallel()
				e := newRuleEnv(t, g)
				g.api(t, "POST", "/v1/memory_stores/"+e.store, "", `{"policy":{"secrets":"`+mode+`"}}`, &struct{}{})
				gitOK(t, e.wt, "pull", "-q") // the policy is a commit of store.json
				before := g.head(t, e.store)
				put(t, filepath.Join(e.wt, "ops", "deploy.md"), sample.Content)
				gitOK(t, e.wt, "add", "-A")
				gitOK(t, e.wt, "commit", "-qm", "deploy notes")
				out, err := gitTry(e.wt, "push", "origin", "main")
				if strings.Contains(out, sample.Secret) {
					t.Fatalf("git's output echoes the secret:\n%s", out)
				}
				if mode == "off" {
					if err != nil {
						t.Fatalf("push refused under secrets off:\n%s", out)
					}
					if content, _, ok := g.read(t, "", e.store, "/ops/deploy.md"); !ok || content != sample.Content {
						t.Fatalf("pushed memory: %q %v", content, ok)
					}
					return
				}
				if err == nil {
					t.Fatalf("push with a secret succeeded:\n%s", out)
				}
				mustHave(t, sample.Name, out, fmt.Sprintf("remote:   /ops/deploy.md: holds a secret (%s at line %d, column %d), and the store's secrets policy is %s",
					sample.Kind, sample.Line, sample.Column, mode), `(commit `)
				if after := g.head(t, e.store); after != before {
					t.Fatalf("main moved from %s to %s", before, after)
				}
			})
		}
	}
	t.Run("quotas", func(t *testing.T) {
		e := newRuleEnv(t, g) // holds /a.md, 2 bytes
		g.api(t, "POST", "/v1/memory_stores/"+e.store, "", `{"policy":{"max_memories":2,"max_bytes":6}}`, &struct{}{})
		gitOK(t, e.wt, "pull", "-q")
		put(t, filepath.Join(e.wt, "b.md"), "b\n")
		put(t, filepath.Join(e.wt, "c.md"), "c\n")
		gitOK(t, e.wt, "add", "-A")
		gitOK(t, e.wt, "commit", "-qm", "two more")
		out, err := gitTry(e.wt, "push", "origin", "main")
		if err == nil {
			t.Fatalf("push past max_memories succeeded:\n%s", out)
		}
		mustHave(t, "quota", out, "remote:   refs/heads/main: the push would make the store hold 3 memories, past its quota max_memories of 2")
		gitOK(t, e.wt, "rm", "-q", "c.md")
		put(t, filepath.Join(e.wt, "b.md"), "bbb\n")
		gitOK(t, e.wt, "commit", "-qam", "one more, to exactly the limits: 2 memories, 6 bytes")
		if out, err := gitTry(e.wt, "push", "origin", "main"); err != nil {
			t.Fatalf("push exactly at the quotas refused:\n%s", out)
		}
	})
}

// TestGitPushedPolicyIsChecked: the policy lives in store.json, so a push may change it,
// and a bad one is refused like any bad metadata.
func TestGitPushedPolicyIsChecked(t *testing.T) {
	g := startGitServer(t)
	e := newRuleEnv(t, g)
	put(t, filepath.Join(e.wt, ".gitmem/store.json"), e.withInfo(func(m map[string]any) { m["policy"] = map[string]any{"secrets": "warn"} }))
	gitOK(t, e.wt, "commit", "-qam", "bad policy")
	out, err := gitTry(e.wt, "push", "origin", "main")
	if err == nil {
		t.Fatalf("push of a bad policy succeeded:\n%s", out)
	}
	mustHave(t, "bad policy", out, `remote:   /.gitmem/store.json: secrets policy must be reject, redact or off, got "warn"`)
	put(t, filepath.Join(e.wt, ".gitmem/store.json"), e.withInfo(func(m map[string]any) {
		m["policy"] = map[string]any{"secrets": "redact", "expire_after": "30d", "max_memories": 5}
	}))
	gitOK(t, e.wt, "commit", "-q", "--amend", "-am", "good policy")
	if out, err := gitTry(e.wt, "push", "origin", "main"); err != nil {
		t.Fatalf("push of a good policy refused:\n%s", out)
	}
	var st storeJSON
	g.api(t, "GET", "/v1/memory_stores/"+e.store, "", "", &st)
	if st.Policy.Secrets != "redact" || st.Policy.ExpireAfter == nil || *st.Policy.ExpireAfter != "30d" || st.Policy.MaxMemories == nil || *st.Policy.MaxMemories != 5 {
		t.Fatalf("policy after the push: %+v", st.Policy)
	}
}

// TestUnchangedHeader: the answer to a memory write says when the write made no version,
// so that a client (gitmem's) need not read the memory first to tell.
func TestUnchangedHeader(t *testing.T) {
	ts := startServer(t, Options{})
	h := map[string]string{"content-type": "application/json"}
	status, body := rawRequest(t, "POST", ts.url+"/v1/memory_stores", `{"name":"u"}`, h)
	var store struct{ ID string }
	if err := json.Unmarshal([]byte(body), &store); err != nil || status != 200 {
		t.Fatalf("store: %d %s", status, body)
	}
	base := ts.url + "/v1/memory_stores/" + store.ID
	// post sends a write and returns its status, the header and the memory's id and version.
	post := func(url, body string) (int, string, string, string) {
		req, err := http.NewRequest("POST", url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("content-type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m struct {
			ID              string `json:"id"`
			MemoryVersionID string `json:"memory_version_id"`
		}
		if resp.StatusCode == 200 {
			if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
				t.Fatal(err)
			}
		}
		return resp.StatusCode, resp.Header.Get(UnchangedHeader), m.ID, m.MemoryVersionID
	}
	write := func(content string) (string, string, string) {
		status, u, id, v := post(base+"/memories", `{"path":"/a.md","content":"`+content+`"}`)
		if status != 200 {
			t.Fatalf("write %q: %d", content, status)
		}
		return u, id, v
	}
	u1, id, v1 := write("one")
	u2, _, v2 := write("one")
	u3, _, v3 := write("two")
	if u1 != "" || u2 != "true" || u3 != "" || v1 != v2 || v3 == v2 {
		t.Errorf("create, same again, changed: %s %q %q, %s %q; want the header only on the second, which keeps the version",
			UnchangedHeader, []string{u1, u2, u3}, v1, v2, v3)
	}
	// An update by id with the content it has, and a restore of the current version.
	if status, u, _, v := post(base+"/memories/"+id, `{"content":"two"}`); status != 200 || u != "true" || v != v3 {
		t.Errorf("unchanged update: %d %q %s, want 200 with the header and version %s", status, u, v, v3)
	}
	if status, u, _, v := post(base+"/memory_versions/"+v3+"/restore", `{}`); status != 200 || u != "true" || v != v3 {
		t.Errorf("restore of the current version: %d %q %s, want 200 with the header and version %s", status, u, v, v3)
	}
	if status, u, _, v := post(base+"/memory_versions/"+v1+"/restore", `{}`); status != 200 || u != "" || v == v3 {
		t.Errorf("restore of an older version: %d %q %s, want 200 with a new version and no header", status, u, v)
	}
	// A refused write says nothing of the kind.
	if status, u, _, _ := post(base+"/memories/"+id, `{"content":"three","precondition":{"type":"content_sha256","content_sha256":"`+strings.Repeat("0", 64)+`"}}`); status != http.StatusConflict || u != "" {
		t.Errorf("write refused by its precondition: %d %q, want 409 without the header", status, u)
	}
}

// TestWriteAnswersItsVersion: a write that asks for it (IncludeVersionHeader, as gitmem's
// client does) is answered with the version it made, as reading that version answers it;
// the SDKs, which do not ask, get the memory alone, as does a write that made no version.
func TestWriteAnswersItsVersion(t *testing.T) {
	ctx := context.Background()
	ts := startServer(t, Options{})
	c := ts.client()
	mem := c.Beta.MemoryStores.Memories
	storeID := newPolicyStore(t, c, map[string]any{"secrets": "redact"})
	ask := option.WithHeader(IncludeVersionHeader, "true")
	content := "the key is " + secrettest.Samples()[0].Content

	plain, err := mem.New(ctx, storeID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/plain.md", Content: anthropic.String("a")})
	if err != nil {
		t.Fatal(err)
	}
	if f := plain.JSON.ExtraFields["gitmem_version"]; f.Valid() {
		t.Errorf("a write that did not ask: gitmem_version %s", f.Raw())
	}
	asked, err := mem.New(ctx, storeID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/asked.md", Content: anthropic.String(content)}, ask)
	if err != nil {
		t.Fatal(err)
	}
	updated, err := mem.Update(ctx, plain.ID, anthropic.BetaMemoryStoreMemoryUpdateParams{MemoryStoreID: storeID, Content: anthropic.String("b")}, ask)
	if err != nil {
		t.Fatal(err)
	}
	deleted, err := mem.Delete(ctx, asked.ID, anthropic.BetaMemoryStoreMemoryDeleteParams{MemoryStoreID: storeID}, ask)
	if err != nil {
		t.Fatal(err)
	}
	for what, f := range map[string]respjson.Field{
		"a create": asked.JSON.ExtraFields["gitmem_version"], "an update": updated.JSON.ExtraFields["gitmem_version"],
		"a delete": deleted.JSON.ExtraFields["gitmem_version"],
	} {
		var got, want any
		if err := json.Unmarshal([]byte(f.Raw()), &got); err != nil {
			t.Fatalf("%s: gitmem_version %q: %v", what, f.Raw(), err)
		}
		id, _ := got.(map[string]any)["id"].(string)
		v, err := c.Beta.MemoryStores.MemoryVersions.Get(ctx, id, anthropic.BetaMemoryStoreMemoryVersionGetParams{MemoryStoreID: storeID})
		if err != nil {
			t.Fatal(err)
		}
		json.Unmarshal([]byte(v.RawJSON()), &want)
		if fmt.Sprint(got) != fmt.Sprint(want) || (what == "a delete") != (v.Operation == "deleted") {
			t.Errorf("%s: gitmem_version %s; reading the version answers %s", what, f.Raw(), v.RawJSON())
		}
	}
	same, err := mem.Update(ctx, plain.ID, anthropic.BetaMemoryStoreMemoryUpdateParams{MemoryStoreID: storeID, Content: anthropic.String("b")}, ask)
	if err != nil {
		t.Fatal(err)
	}
	if f := same.JSON.ExtraFields["gitmem_version"]; f.Valid() {
		t.Errorf("a write that changed nothing: gitmem_version %s", f.Raw())
	}
}
