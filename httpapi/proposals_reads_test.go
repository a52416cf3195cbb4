package httpapi

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/gitmem/gitmem/apikeys"
)

// readBytes is how many bytes this process has read through read system calls
// (/proc/self/io's rchar): files and sockets, the server's and the client's, as they run in
// one process here.
func readBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Skipf("this system counts no reads: %v", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no rchar in /proc/self/io: %s", b)
	return 0
}

// TestProposalChangeReadsRecordOnce: a change of a proposal through the API (a title, a
// comment, a rejection with a comment, an approval) reads the proposal's record once, as
// the answer holds it, whatever its thread: the route's checks take what the list holds,
// and the change reads the record under the store's lock. The routes read it whole for
// their checks first, and the change read it again (a rejection with a comment three
// times): twice the bytes of a record of 100 comments of 4,000 bytes (410 KB) a request.
// Counted by the bytes the process reads, less the answer's, which the client reads.
func TestProposalChangeReadsRecordOnce(t *testing.T) {
	ts := startServer(t, Options{})
	_, rw, _ := ts.keys.Create("person", apikeys.ReadWrite, "")
	_, pk, _ := ts.keys.Create("agent", apikeys.Propose, "")
	h := func(key string) map[string]string {
		return map[string]string{"x-api-key": key, "content-type": "application/json"}
	}
	_, body := rawRequest(t, "POST", ts.url+"/v1/memory_stores", `{"name":"team"}`, h(rw))
	store := decodeJSON[struct{ ID string }](t, body).ID
	base := ts.url + "/v1/memory_stores/" + store
	const comments = 60
	comment := string(must(json.Marshal(map[string]string{"body": strings.Repeat("x", 4000)})))
	rejection := string(must(json.Marshal(map[string]string{"comment": strings.Repeat("y", 4000)})))
	// Two proposals of the agent's (two sessions), each with a long thread.
	var ids []string
	for i, session := range []string{"sesn_one", "sesn_two", "sesn_three"} {
		id := propose(t, base, pk, session, "/"+session+".md")
		for range comments * min(1, 2-i) { // the third without
			if status, body := rawRequest(t, "POST", base+"/proposals/"+id+"/comments", comment, h(rw)); status != 201 {
				t.Fatalf("comment: %d %.300s", status, body)
			}
		}
		ids = append(ids, id)
	}
	record := func(id string) int64 {
		fi, err := os.Stat(ts.data.Layout().ProposalRecord(store, id))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	for _, tc := range []struct {
		name, method, path, body string
		status, thread           int
	}{
		{"title", "PATCH", "", `{"title":"VAT rules"}`, 200, comments},
		{"comment", "POST", "/comments", comment, 201, comments + 1},
		{"reject with a comment", "POST", "/reject", rejection, 200, comments + 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			size := record(ids[0])
			read := change(t, base, ids[0], tc.method, tc.path, tc.body, rw, tc.status, tc.thread)
			if read > size*3/2 {
				t.Errorf("the request read %d bytes besides its answer; the record is %d: %.1f times", read, size, float64(read)/float64(size))
			}
		})
	}
	// An approval reads the store's repository and the fork's too (a megabyte here): the
	// record's reads are what an approval of a proposal with a long thread reads more than
	// one of a proposal with none.
	long, short := record(ids[1]), record(ids[2])
	more := change(t, base, ids[1], "POST", "/approve", `{}`, rw, 200, comments) -
		change(t, base, ids[2], "POST", "/approve", `{}`, rw, 200, 0)
	times := float64(more) / float64(long-short)
	t.Logf("an approval read %d bytes more for a record %d bytes longer: %.2f times", more, long-short, times)
	if times > 1.5 {
		t.Errorf("an approval read %d bytes more for a record %d bytes longer: %.1f times", more, long-short, times)
	}
}

// change makes a change of proposal id with a read_write key, checks that it answers status
// with the proposal whole (thread comments, as Get answers it), and returns how many bytes
// the process read for it besides the answer.
func change(t *testing.T, base, id, method, path, body, key string, status, thread int) int64 {
	t.Helper()
	before := readBytes(t)
	got, answer := rawRequest(t, method, base+"/proposals/"+id+path, body, map[string]string{"x-api-key": key, "content-type": "application/json"})
	read := readBytes(t) - before - int64(len(answer))
	if got != status {
		t.Fatalf("%s %s: %d %.300s", method, path, got, answer)
	}
	p := decodeJSON[proposalJSON](t, answer)
	if p.CommentCount != thread || len(p.Comments) != thread {
		t.Errorf("%s %s answers %d comments of %d; want the whole thread, %d", method, path, len(p.Comments), p.CommentCount, thread)
	}
	return read
}
