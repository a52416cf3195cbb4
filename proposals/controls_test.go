package proposals

import (
	"strings"
	"testing"

	"github.com/gitmem/gitmem/gitstore"
)

// TestTextControls: the manager, which the API, the UI and the CLI (through a server or on
// the data directory) all reach to rename a proposal or comment on it, refuses a title with
// any control character and a comment with one other than a line break (\n, \r\n) or a tab,
// and keeps bidirectional controls.
func TestTextControls(t *testing.T) {
	m, st := newManager(t)
	p := propose(t, m, st, proposer, "/x.md", "x\n")
	for _, title := range []string{"a\nb", "a\r\nb", "a\tb", "\x1b[2J", "a\x00", "a\u0085", "\u009b"} {
		if _, err := m.SetTitle(st.ID(), p.ID, title); !gitstore.IsKind(err, gitstore.KindInvalid) || !strings.Contains(err.Error(), "title has a control character") {
			t.Errorf("title %q: %v", title, err)
		}
	}
	for _, body := range []string{"a\rb", "a\r", "\x1b]0;x\a", "ok\n\x00", "a\u0085", "a\v"} {
		if _, err := m.AddComment(st.ID(), p.ID, person, body); !gitstore.IsKind(err, gitstore.KindInvalid) || !strings.Contains(err.Error(), "comment has a control character") {
			t.Errorf("comment %q: %v", body, err)
		}
	}
	if got, _ := m.Get(st.ID(), p.ID); got.Title != p.Title || len(got.Comments) != 0 {
		t.Errorf("the refusals changed the proposal: %+v", got)
	}
	if got, err := m.SetTitle(st.ID(), p.ID, "Fix \u202ecod.exe"); err != nil || got.Title != "Fix \u202ecod.exe" {
		t.Errorf("a title with a bidirectional control: %+v %v", got, err)
	}
	for _, body := range []string{"a\nb", "a\r\nb\r\n", "\tindented", "\u2067\u05e9\u05dc\u05d5\u05dd\u2069 \u202e"} {
		if _, err := m.AddComment(st.ID(), p.ID, person, body); err != nil {
			t.Errorf("comment %q: %v", body, err)
		}
	}
}
