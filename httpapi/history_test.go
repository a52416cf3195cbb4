package httpapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gitmem/gitmem/apikeys"
)

func decodeJSON[T any](t *testing.T, body string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return v
}

// TestHistoryRoutes restores, diffs and blames over HTTP, with a read_write key, a session
// and a read_only key.
func TestHistoryRoutes(t *testing.T) {
	ts := startServer(t, Options{})
	_, rw, _ := ts.keys.Create("writer", apikeys.ReadWrite, "")
	_, ro, _ := ts.keys.Create("reader", apikeys.ReadOnly, "")
	w := map[string]string{"x-api-key": rw, "content-type": "application/json"}
	sess := map[string]string{"x-api-key": rw, "content-type": "application/json", SessionHeader: "sesn_01HTTPHISTORY000000000000"}
	r := map[string]string{"x-api-key": ro}

	type memory struct {
		ID              string
		Path            string
		Content         *string
		MemoryVersionID string `json:"memory_version_id"`
	}
	_, body := rawRequest(t, "POST", ts.url+"/v1/memory_stores", `{"name":"h"}`, w)
	base := ts.url + "/v1/memory_stores/" + decodeJSON[struct{ ID string }](t, body).ID
	status, body := rawRequest(t, "POST", base+"/memories", `{"path":"/prefs.md","content":"likes tea\nworks late\n"}`, w)
	if status != 200 {
		t.Fatalf("create: %d %s", status, body)
	}
	m1 := decodeJSON[memory](t, body)
	_, body = rawRequest(t, "POST", base+"/memories/"+m1.ID, `{"content":"likes coffee\nworks late\n"}`, sess)
	m2 := decodeJSON[memory](t, body)

	// Diff: from the first version to the head, and by default the last change.
	status, body = rawRequest(t, "GET", base+"/memories/"+m1.ID+"/diff?from="+m1.MemoryVersionID+"&to="+m2.MemoryVersionID, "", r)
	wantDiff := "--- a/prefs.md\n+++ b/prefs.md\n@@ -1,2 +1,2 @@\n-likes tea\n+likes coffee\n works late\n"
	want := `{"type":"memory_diff","memory_id":"` + m1.ID + `","from":"` + m1.MemoryVersionID + `","to":"` + m2.MemoryVersionID +
		`","from_path":"/prefs.md","to_path":"/prefs.md","diff":` + string(must(json.Marshal(wantDiff))) + "}\n"
	if status != 200 || body != want {
		t.Errorf("diff: %d %s\nwant %s", status, body, want)
	}
	if _, again := rawRequest(t, "GET", base+"/memories/"+m1.ID+"/diff", "", r); again != body {
		t.Errorf("default diff: %s", again)
	}
	_, body = rawRequest(t, "GET", base+"/memories/"+m1.ID+"/diff?to="+m1.MemoryVersionID, "", r)
	if d := decodeJSON[map[string]any](t, body); d["from"] != nil || !strings.HasPrefix(d["diff"].(string), "--- /dev/null\n+++ b/prefs.md\n") {
		t.Errorf("diff of the first version: %s", body)
	}
	if status, body = rawRequest(t, "GET", base+"/memories/mem_01NOSUCHMEMORY00000000000/diff?from="+m1.MemoryVersionID, "", r); status != 400 {
		t.Errorf("diff of another memory's version: %d %s", status, body)
	}

	// Blame: line 1 is the session's, line 2 the key's.
	status, body = rawRequest(t, "GET", base+"/memories/"+m1.ID+"/blame", "", r)
	type blame struct {
		Type     string
		MemoryID string `json:"memory_id"`
		Lines    []struct {
			Line      int
			Text      string
			VersionID string            `json:"version_id"`
			CreatedBy map[string]string `json:"created_by"`
			SessionID *string           `json:"session_id"`
			CreatedAt string            `json:"created_at"`
		}
	}
	bl := decodeJSON[blame](t, body)
	if status != 200 || bl.Type != "memory_blame" || len(bl.Lines) != 2 ||
		bl.Lines[0].Text != "likes coffee" || bl.Lines[0].VersionID != m2.MemoryVersionID || bl.Lines[0].SessionID == nil ||
		*bl.Lines[0].SessionID != "sesn_01HTTPHISTORY000000000000" || bl.Lines[0].CreatedBy["type"] != "session_actor" ||
		bl.Lines[1].Line != 2 || bl.Lines[1].VersionID != m1.MemoryVersionID || bl.Lines[1].SessionID != nil ||
		bl.Lines[1].CreatedBy["type"] != "api_actor" || bl.Lines[1].CreatedAt == "" {
		t.Errorf("blame: %d %s", status, body)
	}

	// Restore: a read_only key is refused; a read_write key restores, answering the memory.
	restore := base + "/memory_versions/" + m1.MemoryVersionID + "/restore"
	if status, body = rawRequest(t, "POST", restore, "", r); status != 403 || !strings.Contains(body, "permission_error") {
		t.Errorf("read_only restore: %d %s", status, body)
	}
	status, body = rawRequest(t, "POST", restore+"?view=full", `{"memory_id":"`+m1.ID+`"}`, w)
	m3 := decodeJSON[memory](t, body)
	if status != 200 || m3.ID != m1.ID || m3.Content == nil || *m3.Content != "likes tea\nworks late\n" || m3.MemoryVersionID == m2.MemoryVersionID {
		t.Errorf("restore: %d %s", status, body)
	}
	_, body = rawRequest(t, "GET", base+"/memory_versions/"+m3.MemoryVersionID, "", r)
	if v := decodeJSON[map[string]any](t, body); v["operation"] != "modified" || v["memory_id"] != m1.ID {
		t.Errorf("restored version: %s", body)
	}
	if status, body = rawRequest(t, "POST", restore, `{"memory_id":"mem_01OTHER"}`, w); status != 409 || !strings.Contains(body, "memory_precondition_failed_error") {
		t.Errorf("restore naming another memory: %d %s", status, body)
	}
	if status, body = rawRequest(t, "POST", restore, `{"bogus":1}`, w); status != 400 {
		t.Errorf("restore with an unknown field: %d %s", status, body)
	}

	// A deleted memory comes back; a deletion cannot be restored; a taken path is a conflict.
	rawRequest(t, "DELETE", base+"/memories/"+m1.ID, "", w)
	_, body = rawRequest(t, "GET", base+"/memory_versions?memory_id="+m1.ID+"&operation=deleted", "", r)
	delID := decodeJSON[struct{ Data []struct{ ID string } }](t, body).Data[0].ID
	if status, body = rawRequest(t, "POST", base+"/memory_versions/"+delID+"/restore", "", w); status != 400 || !strings.Contains(body, "deletion") {
		t.Errorf("restore of a deletion: %d %s", status, body)
	}
	_, body = rawRequest(t, "POST", base+"/memories", `{"path":"/prefs.md","content":"another\n"}`, w)
	other := decodeJSON[memory](t, body)
	status, body = rawRequest(t, "POST", base+"/memory_versions/"+m2.MemoryVersionID+"/restore", "", w)
	if e := decodeJSON[struct{ Error map[string]string }](t, body).Error; status != 409 || e["type"] != "memory_path_conflict_error" ||
		e["conflicting_memory_id"] != other.ID || !strings.Contains(e["message"], other.ID) {
		t.Errorf("restore onto a taken path: %d %s", status, body)
	}
	rawRequest(t, "POST", base+"/memories/"+other.ID, `{"path":"/moved.md"}`, w)
	status, body = rawRequest(t, "POST", base+"/memory_versions/"+m2.MemoryVersionID+"/restore", "", sess)
	if back := decodeJSON[memory](t, body); status != 200 || back.ID != m1.ID || back.Path != "/prefs.md" || back.Content != nil {
		t.Errorf("restore of a deleted memory: %d %s", status, body)
	}
	if status, body = rawRequest(t, "GET", base+"/memories/"+other.ID+"/blame", "", map[string]string{}); status != 401 {
		t.Errorf("blame without a key: %d %s", status, body)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
