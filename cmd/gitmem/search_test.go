package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

func TestSearchCommand(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "prefs")
	c.ok("Prefers green tea in the morning.\nCoffee after lunch.\n", "put", "prefs", "/drinks.md")
	c.ok("Deploy to staging on Fridays.\nThe résumé is in the drive.\n", "put", "prefs", "/projects/work.md")

	out := c.ok("", "search", "prefs", "resume", "staging")
	mustContain(t, "search", out, "/projects/work.md  (mem_", "     1: Deploy to staging on Fridays.", "     2: The résumé is in the drive.", "1 of 1 matching memories (searched commit ")
	// A later process catches the index up with a write made in between.
	c.ok("Tea with milk.\n", "put", "prefs", "/projects/tea.md")
	out = c.ok("", "search", "prefs", "tea", "--path-prefix", "/projects/")
	mustContain(t, "search --path-prefix", out, "/projects/tea.md", "1 of 1 matching")
	if strings.Contains(out, "/drinks.md") {
		t.Errorf("search --path-prefix /projects/ shows /drinks.md:\n%s", out)
	}
	mustContain(t, "no match", c.ok("", "search", "prefs", "xylophone"), "no memory matches")
	mustContain(t, "no query", c.fails("", "search", "prefs"), "search: missing QUERY, what to search prefs for: words", "usage: gitmem search STORE QUERY...")

	var res struct {
		Commit string
		Total  int
		Data   []struct {
			MemoryID string `json:"memory_id"`
			Path     string
			Snippets []struct {
				Line       int
				Text       string
				Highlights []struct{ Start, End int }
			}
		}
	}
	if err := json.Unmarshal([]byte(c.ok("", "search", "prefs", `"green tea"`, "--json")), &res); err != nil {
		t.Fatal(err)
	}
	if res.Total != 1 || len(res.Data) != 1 || res.Data[0].Path != "/drinks.md" || len(res.Commit) != 40 {
		t.Fatalf("search --json: %+v", res)
	}
	sn := res.Data[0].Snippets[0]
	if h := sn.Highlights[0]; sn.Line != 1 || sn.Text[h.Start:h.End] != "green tea" {
		t.Errorf("search --json snippet: %+v", sn)
	}
	mustContain(t, "empty query", c.fails("", "search", "prefs", `""`), "no words to search for")
	mustContain(t, "unknown store", c.fails("", "search", "nope", "tea"), `no store with id or name "nope"`)
}

// TestServeSearch: gitmem serve answers searches over HTTP, and the index it kept is the
// one the CLI finds after it stopped.
func TestServeSearch(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "prefs")
	c.ok("Prefers green tea.\n", "put", "prefs", "/drinks.md")
	storeID := regexp.MustCompile(`memstore_\w+`).FindString(c.ok("", "stores", "list"))

	// The address is in the first-run message.
	cmd := exec.Command(binary, "--data", c.data, "serve", "--addr", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var url string
	for lines := bufio.NewScanner(stdout); url == "" && lines.Scan(); {
		url = regexp.MustCompile(`http://127\.0\.0\.1:\d+`).FindString(lines.Text())
	}
	base := url + "/v1/memory_stores/" + storeID
	resp, err := http.Post(base+"/memories", "application/json", strings.NewReader(`{"path":"/food.md","content":"Likes green curry."}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = http.Get(base + "/search?q=green")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"total":2`) {
		t.Fatalf("search over HTTP: %d %s", resp.StatusCode, body)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("gitmem serve: %v", err)
	}
	mustContain(t, "search after serve", c.ok("", "search", "prefs", "curry"), "/food.md", "1 of 1")
}
