package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/secrets/secrettest"
)

func TestStorePolicyCommands(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "notes", "--secrets", "redact", "--max-memories", "2")
	mustContain(t, "show", c.ok("", "stores", "show", "notes"), "memories     0 (0 bytes)", "quotas       at most 2 memories", "secrets      redact", "expire       never")
	mustContain(t, "set", c.ok("", "stores", "set", "notes", "--expire-after", "30d", "--max-bytes", "100", "--secrets", "reject"),
		"secrets reject, expire after 30d unused, memories 0 of 2, bytes 0 of 100")
	for args, want := range map[string]string{
		"--secrets maybe":        `secrets policy must be reject, redact or off, got "maybe"`,
		"--expire-after 5m":      "expire_after must be at least 1h (or 0 for never), got 5m",
		"--expire-after soon":    `--expire-after: duration "soon" is not a duration`,
		"--max-memories -1":      "max_memories must be 0 (no limit) or more, got -1",
		"--description whatever": "unknown flag: --description",
	} {
		mustContain(t, args, c.fails("", append([]string{"stores", "set", "notes"}, strings.Fields(args)...)...), want)
	}
	mustContain(t, "set nothing", c.fails("", "stores", "set", "notes"), "nothing to set")

	sample := secrettest.Samples()[2]
	out := c.fails(sample.Content, "put", "notes", "/ci.md")
	mustContain(t, "rejected secret", out, "the content holds a secret (github-pat at line 1, column 17)")
	if strings.Contains(out, sample.Secret) {
		t.Fatalf("the error echoes the secret: %s", out)
	}
	c.ok("", "stores", "set", "notes", "--secrets", "redact")
	stdout, stderr, code := c.run(sample.Content, "put", "notes", "/ci.md")
	if code != 0 {
		t.Fatalf("put under redact: %s %s", stdout, stderr)
	}
	mustContain(t, "redaction note", stderr, "redacted 1 secret(s) before saving", "github-pat at line 1, column 17")
	mustContain(t, "redacted content", c.ok("", "cat", "notes", "/ci.md"), "The CI token is [REDACTED github-pat], rotate")

	c.ok("x", "put", "notes", "/b.md")
	mustContain(t, "quota", c.fails("y", "put", "notes", "/c.md"), "3 memories, past its quota max_memories of 2")
	mustContain(t, "show usage", c.ok("", "stores", "show", "notes", "--json"), `"usage": {`, `"memories": 2`, `"max_memories": 2`)
}

// TestExpireCommandAndSchedule writes memories with a clock set 40 days back, then lets the
// CLI and the server's schedule expire them at the real time.
func TestExpireCommandAndSchedule(t *testing.T) {
	c := newCLI(t)
	ctx := context.Background()
	past := time.Now().Add(-40 * 24 * time.Hour)
	d, err := gitstore.Open(ctx, c.data, gitstore.Options{Clock: func() time.Time { return past }})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, name := range []string{"notes", "other"} {
		s, err := d.CreateStore(ctx, gitstore.CreateStoreInput{Name: name, Actor: gitstore.SystemActor,
			Policy: gitstore.Policy{ExpireAfter: gitstore.Duration(30 * 24 * time.Hour)}})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"/old.md", "/kept.md"} {
			if _, err := s.Write(ctx, gitstore.WriteInput{Path: p, Content: "from long ago", Actor: gitstore.SystemActor}); err != nil {
				t.Fatal(err)
			}
		}
		ids = append(ids, s.ID())
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	c.ok("", "cat", "notes", "/kept.md") // a read keeps it
	dry := c.ok("", "expire", "notes", "--dry-run")
	mustContain(t, "dry run", dry, ids[0]+": would expire 1 memory unused for 30d", "/old.md")
	if strings.Contains(dry, "/kept.md") {
		t.Fatalf("dry run lists a memory just read:\n%s", dry)
	}
	c.ok("", "cat", "notes", "/old.md") // the dry run deleted nothing; this read keeps it now
	mustContain(t, "nothing left", c.ok("", "expire", "notes"), "expired 0 memories")

	c.ok("", "stores", "set", "notes", "--expire-after", "never")
	mustContain(t, "no expiry", c.fails("", "expire", "notes"), "has no expiry", "gitmem stores set")

	// The server expires /old.md and /kept.md of the other store on its schedule; they come
	// back with restore.
	cmd, banner, url := startServe(t, c, "--expire-every", "200ms")
	mustContain(t, "banner", banner, "stale: expired every 200ms, in stores that set an expiry")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get(url + "/v1/memory_stores/" + ids[1] + "/memories")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(body), `"data":[]`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not expire the memories: %s", body)
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("gitmem serve: %v", err)
	}
	log := c.ok("", "log", ids[1], "/old.md")
	mustContain(t, "log", log, "deleted    /old.md  "+gitstore.SystemActor.ID, "created")
	lines := strings.Split(strings.TrimSpace(log), "\n")
	created := strings.Fields(lines[len(lines)-1])
	c.ok("", "restore", ids[1], created[len(created)-1])
	if got := c.ok("", "cat", ids[1], "/old.md"); got != "from long ago" {
		t.Fatalf("restored content %q", got)
	}
	mustContain(t, "nothing more", c.ok("", "expire", ids[1], "--dry-run"), "would expire 0 memories")
}
