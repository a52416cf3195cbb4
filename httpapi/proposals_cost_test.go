package httpapi

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gitmem/gitmem/apikeys"
)

// TestProposalDiffCost: a proposal's diff, which every read of the proposal makes, costs a
// bounded time, whatever its changes. It diffed every changed memory, up to 8 MiB of content,
// with nothing but that bound: a propose key that changes 60 memories of 100 KB, each to a
// short content that shares no line with main's, made each read of its own proposal cost
// the server seconds of CPU (60 diffs of a quarter of a second each, with diffs bounded one
// by one).
func TestProposalDiffCost(t *testing.T) {
	ts := startServer(t, Options{})
	_, rw, _ := ts.keys.Create("person", apikeys.ReadWrite, "")
	_, pk, _ := ts.keys.Create("agent", apikeys.Propose, "")
	w := map[string]string{"x-api-key": rw, "content-type": "application/json"}
	p := map[string]string{"x-api-key": pk, "content-type": "application/json"}
	_, body := rawRequest(t, "POST", ts.url+"/v1/memory_stores", `{"name":"costly"}`, w)
	base := ts.url + "/v1/memory_stores/" + decodeJSON[struct{ ID string }](t, body).ID
	long, short := strings.Repeat("a\n", 50000), strings.Repeat("b\n", 670)
	for i := range 60 {
		path := fmt.Sprintf("/m/%02d.md", i)
		for _, c := range []struct {
			h       map[string]string
			content string
		}{{w, long}, {p, short}} {
			status, body := rawRequest(t, "POST", base+"/memories", string(must(json.Marshal(map[string]string{"path": path, "content": c.content}))), c.h)
			if status != 200 {
				t.Fatalf("write %s: %d %s", path, status, body)
			}
		}
	}
	status, body := getWithin(t, base+"/proposals/"+onlyOpenProposal(t, base, pk).ID, pk, 10*time.Second)
	if status != 200 {
		t.Fatalf("the proposal: %d %.300s", status, body)
	}
	got := decodeJSON[struct {
		Changes []struct {
			Path      string
			Diff      string
			Truncated bool
		}
	}](t, body)
	diffed := 0
	for _, c := range got.Changes {
		if c.Diff != "" {
			diffed++
		} else if !c.Truncated {
			t.Errorf("%s: neither a diff nor truncated", c.Path)
		}
	}
	if len(got.Changes) != 60 || diffed == 0 {
		t.Fatalf("%d changes, %d diffed", len(got.Changes), diffed)
	}
	t.Logf("%d of %d changes diffed", diffed, len(got.Changes))
}
