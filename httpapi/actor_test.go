package httpapi

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/gitmem/gitmem/apikeys"
)

// TestActorNameAndEmail: the name and email that gitmem knows of an actor (the git author
// of its commit, as gitmem log prints it) are extra fields of the actor object, read here
// with the official Go SDK, on versions, on blame, and after a reindex.
func TestActorNameAndEmail(t *testing.T) {
	g := startGitServer(t)
	ctx := context.Background()
	_, secret, err := g.keys.Create("deploy bot", apikeys.ReadWrite, "")
	if err != nil {
		t.Fatal(err)
	}
	store := g.createStore(t, secret, "people")
	g.write(t, secret, store, "/notes.md", "from the API\n")
	if status, body := rawRequest(t, "POST", g.url+"/v1/memory_stores/"+store+"/memories", `{"path":"/session.md","content":"from a session\n"}`,
		map[string]string{"x-api-key": secret, SessionHeader: "sesn_011CZkZbQ3w7rNfAnTe4Ua8P"}); status != 200 {
		t.Fatalf("write in a session: %d %s", status, body)
	}

	work := t.TempDir()
	gitOK(t, work, "clone", "-q", g.repoURL(secret, store), "wt")
	wt := filepath.Join(work, "wt")
	put(t, filepath.Join(wt, "ada.md"), "Notes on the Analytical Engine\n")
	gitOK(t, wt, "add", "-A")
	gitOK(t, wt, "commit", "-qm", "Ada's notes", "--author", "Ada Lovelace <ada@example.com>")
	gitOK(t, wt, "push", "-q")

	c := anthropic.NewClient(option.WithBaseURL(g.url), option.WithAPIKey(secret))
	check := func(when string) {
		t.Helper()
		page, err := c.Beta.MemoryStores.MemoryVersions.List(ctx, store, anthropic.BetaMemoryStoreMemoryVersionListParams{})
		if err != nil {
			t.Fatal(err)
		}
		var sawUser, sawKey, sawSession bool
		for _, v := range page.Data {
			switch v.CreatedBy.Type {
			case "user_actor":
				a := v.CreatedBy.AsUserActor()
				name, email := a.JSON.ExtraFields["name"].Raw(), a.JSON.ExtraFields["email"].Raw()
				if name != `"Ada Lovelace"` || email != `"ada@example.com"` || !strings.HasPrefix(a.UserID, "user_") {
					t.Errorf("%s: user actor %s: name %s, email %s", when, a.RawJSON(), name, email)
				}
				sawUser = true
			case "api_actor":
				a := v.CreatedBy.AsAPIActor()
				if name := a.JSON.ExtraFields["name"].Raw(); name != `"deploy bot"` {
					t.Errorf("%s: api actor %s: name %s, want the key's name", when, a.RawJSON(), name)
				}
				if _, ok := a.JSON.ExtraFields["email"]; ok {
					t.Errorf("%s: api actor %s has an email, made up from its id", when, a.RawJSON())
				}
				sawKey = true
			case "session_actor":
				// gitmem knows no name or email of a session: none is made up.
				if a := v.CreatedBy.AsSessionActor(); len(a.JSON.ExtraFields) != 0 {
					t.Errorf("%s: session actor %s has extra fields", when, a.RawJSON())
				}
				sawSession = true
			}
		}
		if !sawUser || !sawKey || !sawSession {
			t.Errorf("%s: versions %s: want a user, an api and a session actor", when, page.RawJSON())
		}

		// Blame shows the same actor.
		var list struct {
			Data []struct{ ID, Path string }
		}
		g.api(t, "GET", "/v1/memory_stores/"+store+"/memories?view=basic", secret, "", &list)
		for _, m := range list.Data {
			if m.Path != "/ada.md" {
				continue
			}
			var blame struct {
				Lines []struct {
					CreatedBy map[string]string `json:"created_by"`
				}
			}
			g.api(t, "GET", "/v1/memory_stores/"+store+"/memories/"+m.ID+"/blame", secret, "", &blame)
			if len(blame.Lines) != 1 || blame.Lines[0].CreatedBy["name"] != "Ada Lovelace" || blame.Lines[0].CreatedBy["email"] != "ada@example.com" {
				t.Errorf("%s: blame %+v", when, blame)
			}
		}
	}
	check("after the push")

	if err := g.data.Reindex(ctx, store, nil); err != nil {
		t.Fatal(err)
	}
	check("after a reindex")
}
