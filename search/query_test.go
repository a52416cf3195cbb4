package search

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gitmem/gitmem/gitstore"
)

func TestParseQuery(t *testing.T) {
	cases := []struct {
		q    string
		want parsedQuery
	}{
		{`deploy staging`, parsedQuery{words: []string{"deploy", "staging"}}},
		{`"exact phrase" word`, parsedQuery{words: []string{"word"}, phrases: []string{"exact phrase"}}},
		{`"unclosed phrase`, parsedQuery{phrases: []string{"unclosed phrase"}}},
		{`deplo* a* *`, parsedQuery{words: []string{"a", ""}, prefixes: []string{"deplo"}}},
		{`-secret -"two words" - x`, parsedQuery{words: []string{"-", "x"}, exclude: []string{"secret", "two words"}}},
		{`path:/projects/ PATH:notes path:"my notes" path:`, parsedQuery{words: []string{"path:"}, pathWords: []string{"notes", "my notes"}, pathFilters: []string{"/projects/"}}},
		{`tea OR coffee AND milk`, parsedQuery{words: []string{"tea", "coffee", "milk"}}},
		{"  \t ", parsedQuery{}},
	}
	for _, c := range cases {
		got := parseQuery(c.q)
		got.words = nonEmpty(got.words)
		c.want.words = nonEmpty(c.want.words)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("parseQuery(%q) =\n %+v, want\n %+v", c.q, got, c.want)
		}
	}
}

func nonEmpty(ss []string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// TestRanking holds BM25's promises on a small store: more of the query's words beat fewer,
// a rare word beats a common one, repeated words beat one mention, a word in the path
// counts, and a memory id finds its memory.
func TestRanking(t *testing.T) {
	f := newFixture(t, Options{})
	for i := range 20 {
		f.write("/filler/"+string(rune('a'+i))+".md", filler(i)+"\nThe database was mentioned here once.\n")
	}
	both := f.write("/ops/runbook.md", "How to deploy to staging:\n1. build\n2. deploy the database migrations to staging\n")
	f.write("/ops/other.md", "We deploy on Fridays.\n")
	f.write("/ops/rare.md", "The zanzibar key rotates weekly; the database is backed up.\n")
	tea := f.write("/preferences/tea.md", "Likes green tea. Tea in the morning, tea after lunch.\n")
	f.write("/preferences/drinks.md", "Drinks coffee, and sometimes tea.\n")
	f.write("/people/zoe.md", "Zoe prefers coffee.\n")

	if got := paths(f.search("deploy staging")); len(got) != 2 || got[0] != "/ops/runbook.md" {
		t.Errorf("deploy staging: got %q, want /ops/runbook.md first of 2", got)
	}
	// "zanzibar" is rare, "database" common: the rare word decides.
	if got := f.search("database zanzibar"); got.Total != 22 || got.Hits[0].Path != "/ops/rare.md" {
		t.Errorf("database zanzibar: got %d hits, first %q; want 22, /ops/rare.md first", got.Total, got.Hits[0].Path)
	}
	if got := paths(f.search("tea")); len(got) != 2 || got[0] != "/preferences/tea.md" {
		t.Errorf("tea: got %q, want /preferences/tea.md (path and three mentions) first", got)
	}
	// A word only in the path is found; "prefers" is the same word stemmed, and ranks
	// below it.
	if got := paths(f.search("preferences")); len(got) != 3 || got[2] != "/people/zoe.md" {
		t.Errorf("preferences: %q, want the two under /preferences/ and then /people/zoe.md", got)
	}
	f.expect("zoe", "/people/zoe.md")
	// A memory id finds its memory, first.
	if got := paths(f.search(tea + " coffee")); len(got) < 1 || got[0] != "/preferences/tea.md" {
		t.Errorf("by id: got %q, want /preferences/tea.md first", got)
	}
	if got := f.search("deploy"); got.Hits[0].MemoryID != both && got.Hits[1].MemoryID != both {
		t.Errorf("deploy: the hits do not carry the memory ids: %+v", got.Hits)
	}
	for _, h := range f.search("deploy").Hits {
		if h.Score <= 0 {
			t.Errorf("hit %s has score %v", h.Path, h.Score)
		}
	}
	// Nothing matches: no hits, no error.
	f.expect("xylophone")
	// Limits.
	if got := f.searchReq(Request{Query: "database", Limit: 5}); len(got.Hits) != 5 || got.Total != 22 {
		t.Errorf("limit 5: %d hits of %d, want 5 of 22", len(got.Hits), got.Total)
	}
	for _, bad := range []Request{{Query: "x", Limit: 101}, {Query: "x", Limit: -1}, {Query: "   "}, {Query: `"" -x`}, {Query: "x", PathPrefix: "no-slash/"}} {
		if _, err := f.svc.Search(f.ctx, f.st.ID(), bad); !gitstore.IsKind(err, gitstore.KindInvalid) {
			t.Errorf("Search(%+v) = %v, want an invalid error", bad, err)
		}
	}
	if _, err := f.svc.Search(f.ctx, "memstore_01NOSUCHSTORE0000000000000", Request{Query: "x"}); !gitstore.IsKind(err, gitstore.KindNotFound) {
		t.Errorf("unknown store: %v, want not_found", err)
	}
}

// TestWrittenBeforeOtherForms: a memory with a word as written ranks above one with only
// another of its forms, however much rarer that form is in the store (the stem field holds
// only the stems that differ from their words, and weights.go weighs its matches as if it
// held every form's); every form is found.
func TestWrittenBeforeOtherForms(t *testing.T) {
	f := newFixture(t, Options{})
	for i := range 20 {
		f.write("/filler/"+string(rune('a'+i))+".md", filler(i)+"\nThe user asked for this once.\n")
		f.write("/deploys/"+string(rune('a'+i))+".md", filler(i+20)+"\nWe deploy on Fridays.\n")
	}
	f.write("/rare/users.md", filler(40)+"\nThe users asked for this once.\n")
	f.write("/rare/deploying.md", filler(41)+"\nWe are deploying on Fridays.\n")
	f.write("/rare/deployed.md", filler(42)+"\nWe deployed on Fridays.\n")
	last := func(q string, total int, want ...string) {
		t.Helper()
		res := f.searchReq(Request{Query: q, Limit: 100})
		got := paths(res)
		tail := slices.Sorted(slices.Values(got[max(0, len(got)-len(want)):]))
		if res.Total != uint64(total) || !slices.Equal(tail, want) {
			t.Errorf("%s: %d hits ending %q, want %d ending %q (in any order)", q, res.Total, tail, total, want)
		}
	}
	last("user", 21, "/rare/users.md")
	last("deploy", 22, "/rare/deployed.md", "/rare/deploying.md")
	// A form that is not its own stem: as written first, then every other form.
	if got := paths(f.searchReq(Request{Query: "users", Limit: 100})); len(got) != 21 || got[0] != "/rare/users.md" {
		t.Errorf("users: %d hits, first %q; want 21, /rare/users.md first", len(got), got[0])
	}
	if got := paths(f.searchReq(Request{Query: "deploying", Limit: 100})); len(got) != 22 || got[0] != "/rare/deploying.md" {
		t.Errorf("deploying: %d hits, first %q; want 22, /rare/deploying.md first", len(got), got[0])
	}
}

func TestPhrasesPrefixesAndFilters(t *testing.T) {
	f := newFixture(t, Options{})
	f.writeAll(map[string]string{
		"/projects/apollo/plan.md":  "The launch window opens in July.\nWindow of the launch room faces east.\n",
		"/projects/apollo/notes.md": "Launch checklist: fuel, window, crew.\n",
		"/projects/gemini/plan.md":  "Deployment of the gemini service uses blue-green deploys.\n",
		"/projects/apollo.md":       "Overview of apollo: the launch window.\n",
		"/personal/todo.md":         "Buy a new window for the launch party.\n",
		"/config/settings.md":       "user_id is 42; see notes.md and e-mail ann@example.com\n",
	})

	// A phrase needs its words together and in order.
	f.expectSet(`"launch window"`, "/projects/apollo/plan.md", "/projects/apollo.md")
	f.expectSet(`"window launch"`)
	// Phrase plus words: the phrase is required, the words rank.
	f.expectSet(`"launch window" july`, "/projects/apollo/plan.md", "/projects/apollo.md")
	if got := paths(f.search(`"launch window" july`)); got[0] != "/projects/apollo/plan.md" {
		t.Errorf("phrase and word: got %q, want the memory with both first", got)
	}
	// Prefixes, in content and in paths.
	f.expectSet("deploy*", "/projects/gemini/plan.md")
	f.expectSet("gemi*", "/projects/gemini/plan.md")
	f.expectSet("check*", "/projects/apollo/notes.md")
	// Path filters: path_prefix, path: with a directory, with a memory, with a word.
	both := []string{"/projects/apollo/plan.md", "/projects/apollo/notes.md", "/projects/apollo.md", "/personal/todo.md"}
	f.expectSet("window", both...)
	f.expectSet("window path:/projects/apollo/", "/projects/apollo/plan.md", "/projects/apollo/notes.md")
	if got := f.searchReq(Request{Query: "window", PathPrefix: "/projects/apollo/"}); len(got.Hits) != 2 {
		t.Errorf("path_prefix /projects/apollo/: %q", paths(got))
	}
	// A prefix without its slash is the memory or the directory of that name, never a
	// sibling that merely starts the same.
	if got := f.searchReq(Request{Query: "window", PathPrefix: "/projects/apollo"}); len(got.Hits) != 2 {
		t.Errorf("path_prefix /projects/apollo: %q, want the two below apollo/, not apollo.md", paths(got))
	}
	f.expectSet("window path:/projects/apollo.md", "/projects/apollo.md")
	// A folder selects; it changes no score (the words rank as they would without it).
	all := map[string]float64{}
	for _, h := range f.search("window launch").Hits {
		all[h.Path] = h.Score
	}
	for _, q := range []string{"window launch path:/projects/apollo/", "window launch path:/projects/apollo path:/projects/"} {
		for _, h := range f.search(q).Hits {
			if d := h.Score - all[h.Path]; d > 1e-9 || d < -1e-9 {
				t.Errorf("%s: %s scores %v, %v without the folder", q, h.Path, h.Score, all[h.Path])
			}
		}
	}
	f.expectSet("window path:/proj/")
	f.expectSet("window path:plan", "/projects/apollo/plan.md")
	f.expectSet("path:plan", "/projects/apollo/plan.md", "/projects/gemini/plan.md")
	// A filter alone lists what is below it, in path order.
	f.expect("path:/projects/apollo/", "/projects/apollo/notes.md", "/projects/apollo/plan.md")
	// Exclusions.
	f.expectSet("window -party", "/projects/apollo/plan.md", "/projects/apollo/notes.md", "/projects/apollo.md")
	f.expectSet(`window -"launch window"`, "/projects/apollo/notes.md", "/personal/todo.md")
	// Words that UAX #29 would keep whole are split, and found either way ("notes.md" is
	// also a path; "user" is one typo from "uses").
	for _, q := range []string{"user_id", "user", "notes.md", "e-mail", "example.com", "ann@example.com", "42"} {
		if got := paths(f.search(q)); len(got) == 0 || got[0] != "/config/settings.md" {
			t.Errorf("search %q: %q, want /config/settings.md first", q, got)
		}
	}
}

// TestTypos: one wrong, missing or extra letter still finds the word; two for long words.
func TestTypos(t *testing.T) {
	f := newFixture(t, Options{})
	f.write("/a.md", "The kubernetes cluster runs postgres.\n")
	f.write("/b.md", "Remember the anniversary dinner.\n")
	for _, q := range []string{"kubernetis", "postgress", "postgre", "anniversery", "aniversary", "anniwersery"} {
		if got := f.search(q); len(got.Hits) != 1 {
			t.Errorf("typo %q: %q, want one hit", q, paths(got))
		}
	}
	// An exact match outranks a fuzzy one.
	f.write("/c.md", "The cluster has postgis.\n")
	if got := paths(f.search("postgis")); len(got) == 0 || got[0] != "/c.md" {
		t.Errorf("postgis: %q, want /c.md first", got)
	}
	// Short words are not fuzzy: "cat" does not find "car".
	f.write("/d.md", "A red car.\n")
	f.expect("cat")
}

// TestTypoTotal: whether words also match with typos does not depend on the page's size,
// and neither does the total.
func TestTypoTotal(t *testing.T) {
	f := newFixture(t, Options{})
	for i := 0; i < 12; i++ {
		f.write(fmt.Sprintf("/db/%02d.md", i), "The database is postgres.\n")
	}
	f.write("/typo.md", "The database is postgress.\n")
	small := f.searchReq(Request{Query: "postgres", Limit: 5})
	large := f.searchReq(Request{Query: "postgres", Limit: 50})
	if small.Total != 12 || large.Total != 12 || len(large.Hits) != 12 {
		t.Errorf("totals %d (page of 5) and %d (page of 50, %d hits), want 12 each", small.Total, large.Total, len(large.Hits))
	}
	// Below the bound, typos count whatever the page: three exact hits and one typo.
	for i := 0; i < 3; i++ {
		f.write(fmt.Sprintf("/cache/%d.md", i), "The cache is memcached.\n")
	}
	f.write("/cache/typo.md", "The cache is memcachet.\n")
	small = f.searchReq(Request{Query: "memcached", Limit: 2})
	large = f.searchReq(Request{Query: "memcached", Limit: 50})
	if small.Total != 4 || large.Total != 4 {
		t.Errorf("totals %d (page of 2) and %d (page of 50), want 4 each", small.Total, large.Total)
	}
}

// TestMultilingual: text in English, Spanish, French, German, Chinese and Japanese is
// found by its words, without regard to accents or case; English words by their stems.
func TestMultilingual(t *testing.T) {
	f := newFixture(t, Options{})
	f.writeAll(map[string]string{
		"/en.md": "Updated my résumé; deploying the new café website. Children's books.\n",
		"/es.md": "La canción de la mañana: el niño come piñas en Málaga.\n",
		"/fr.md": "Le garçon a mangé une crème brûlée à la fenêtre de l'hôtel.\n",
		"/de.md": "Die Straße vor dem Büro ist über die Brücke erreichbar. Größe: XL.\n",
		"/zh.md": "我喜欢在北京吃烤鸭。上海的天气很好。\n",
		"/ja.md": "東京タワーに行きました。ラーメンが美味しかったです。\n",
		"/ko.md": "서울에서 김치를 먹었습니다.\n",
	})
	cases := map[string][]string{
		"resume": {"/en.md"}, "RÉSUMÉ": {"/en.md"}, "cafe": {"/en.md"}, "deploy": {"/en.md"}, "book": {"/en.md"}, "children": {"/en.md"},
		"cancion": {"/es.md"}, "canción": {"/es.md"}, "manana": {"/es.md"}, "nino": {"/es.md"}, "malaga": {"/es.md"}, "piña": {"/es.md"},
		"garcon": {"/fr.md"}, "creme brulee": {"/fr.md"}, `"crème brûlée"`: {"/fr.md"}, "fenetre": {"/fr.md"}, "hotel": {"/fr.md"},
		"strasse": {"/de.md"}, "Straße": {"/de.md"}, "buro": {"/de.md"}, "brucke": {"/de.md"}, "grosse": {"/de.md"},
		"北京": {"/zh.md"}, "烤鸭": {"/zh.md"}, "上海": {"/zh.md"}, `"天气很好"`: {"/zh.md"},
		"東京タワー": {"/ja.md"}, "ラーメン": {"/ja.md"}, "東京": {"/ja.md"}, "美味しかった": {"/ja.md"},
		"서울에서": {"/ko.md"}, "김치": {"/ko.md"},
	}
	for q, want := range cases {
		f.expectSet(q, want...)
	}
	// Bigrams do not leak across: a Chinese word absent from the store finds nothing.
	f.expectSet(`"广州"`)
	f.expectSet(`"京北"`)
}

func TestSnippets(t *testing.T) {
	f := newFixture(t, Options{})
	long := strings.Repeat("filler words before the match ", 20) + "the needle is here" + strings.Repeat(" and filler after", 20)
	content := "# Title\n\nfirst line about tea\nnothing here\r\nsecond line: tea and coffee, coffee\n" + long + "\n北京烤鸭很好吃\nlast résumé line"
	f.write("/doc.md", content)
	check := func(q string, limit int, want ...string) {
		t.Helper()
		res := f.searchReq(Request{Query: q, Snippets: limit})
		if len(res.Hits) != 1 {
			t.Fatalf("search %q: %d hits, want 1", q, len(res.Hits))
		}
		var got []string
		for _, s := range res.Hits[0].Snippets {
			got = append(got, strings.Join([]string{itoa(s.Line), s.Marked("[", "]")}, ": "))
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("snippets of %q:\n got  %q\n want %q", q, got, want)
		}
	}
	check("tea", 0, "3: first line about [tea]", "5: second line: [tea] and coffee, coffee")
	// The line with more of the query's words comes first when lines are limited.
	check("tea coffee", 1, "5: second line: [tea] and [coffee], [coffee]")
	// A long line is cut around its first match.
	at := strings.Index(long, "needle")
	check("needle", 0, "6: …"+long[at-snippetLead:at]+"[needle]"+long[at+len("needle"):at-snippetLead+maxSnippetBytes]+"…")
	check("北京", 0, "7: [北京]烤鸭很好吃")
	check("烤鸭很好", 0, "7: 北京[烤鸭很好]吃")
	check("resume", 0, "8: last [résumé] line")
	check(`"tea and coffee"`, 0, "5: second line: [tea and coffee], coffee")
	check("coff*", 0, "5: second line: tea and [coffee], [coffee]")
	// Where words matched is found after the search, for the page's hits (matchLocations):
	// also with filters and exclusions, which it leaves out, with a phrase, and with typos.
	check("coffee path:/doc.md -zebra", 0, "5: second line: tea and [coffee], [coffee]")
	check(`needle "first line"`, 0, "3: [first line] about tea", "6: …"+long[at-snippetLead:at]+"[needle]"+long[at+len("needle"):at-snippetLead+maxSnippetBytes]+"…")
	check("cofee", 0, "5: second line: tea and [coffee], [coffee]")
	// A match in the path only: the first non-blank line, without highlights.
	check("doc", 0, "1: # Title")
}

func itoa(n int) string {
	const digits = "0123456789"
	if n < 10 {
		return digits[n : n+1]
	}
	return itoa(n/10) + digits[n%10:n%10+1]
}

// TestStemOfFoldedWord: a query word finds its other forms when it is folded into a term
// that the analyzer would split again ("ｃｏｎｆｉｇ．ｆｉｌｅｓ" folds to "config.files", whose
// "." splits words in text): its stem is the term's stem, as the index computes it, not
// that of the term analyzed again.
func TestStemOfFoldedWord(t *testing.T) {
	f := newFixture(t, Options{})
	f.write("/notes/a.md", "Keep the ｃｏｎｆｉｇ．ｆｉｌｅ under version control.\n")
	f.write("/notes/b.md", "Every ｃｏｎｆｉｇ．ｆｉｌｅｓ entry is reviewed.\n")
	f.write("/notes/c.md", filler(1))
	f.expectSet("ｃｏｎｆｉｇ．ｆｉｌｅｓ", "/notes/a.md", "/notes/b.md")
	f.expectSet("ｃｏｎｆｉｇ．ｆｉｌｅ", "/notes/a.md", "/notes/b.md")
}

// TestStemThatIsNotItsOwnStem: a word's stem written as a word is one of its forms only
// where it is its own stem. "environmental" stems to "environment", which stems to
// "environ": a memory with "environment" holds another word, which "environmental" did
// not find before the stem field held only the stems that differ from their words.
func TestStemThatIsNotItsOwnStem(t *testing.T) {
	f := newFixture(t, Options{})
	var want []string
	for i := range typosBelow { // as many as keep typos out of the search
		p := fmt.Sprintf("/adj/%c.md", 'a'+i)
		f.write(p, filler(i)+"\nThe environmental rules apply.\n")
		want = append(want, p)
	}
	f.write("/noun/x.md", filler(20)+"\nThe environment is shared.\n")
	res := f.searchReq(Request{Query: "environmental", Limit: 100})
	if got := paths(res); res.Total != uint64(len(want)) || !slices.Contains(got, want[0]) || slices.Contains(got, "/noun/x.md") {
		t.Errorf("environmental: %d hits %q, want the %d of /adj/", res.Total, got, len(want))
	}
}
