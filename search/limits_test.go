package search

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gitmem/gitmem/gitstore"
)

// letters returns a word of n letters.
func letters(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteByte("staging"[i%7])
	}
	return b.String()
}

// twoLetterPrefixes is consonant-vowel prefixes: ba* be* bi* ...
func twoLetterPrefixes() []string {
	var ps []string
	for _, a := range "bcdfghjklmnprstvwz" {
		for _, v := range "aeiou" {
			ps = append(ps, string(a)+string(v)+"*")
		}
	}
	return ps
}

// TestQueryBounds: a query over a bound is refused with a KindInvalid error that names the
// limit, and a query at every bound is searched.
func TestQueryBounds(t *testing.T) {
	f := newFixture(t, Options{})
	long24 := "abcdefghijklmnopqrstuvwx"
	f.write("/a.md", "Deploy to staging. The staging database is small.\n"+long24+" user_id\n")
	f.write("/b.md", "Tea in the morning.\n")

	refused := []struct{ q, limit string }{
		{letters(MaxQueryBytes + 1), "the limit is 1024 bytes"},
		{letters(400000), "the limit is 1024 bytes"},
		{letters(MaxTermBytes + 1), "the limit is 256 bytes per word or phrase"},
		{`"` + strings.Repeat("tea ", 65) + `"`, "the limit is 256 bytes per word or phrase"},
		{"-" + letters(MaxTermBytes+1), "the limit is 256 bytes per word or phrase"},
		{"path:" + letters(MaxTermBytes+1), "the limit is 256 bytes per word or phrase"},
		{letters(MaxTermBytes+1) + "*", "the limit is 256 bytes"},
		{strings.Join(twoLetterPrefixes()[:MaxPrefixes+1], " "), "the limit is 4 prefix terms"},
		{strings.Repeat("tea ", MaxQueryWords+1), "the limit is 16 words ("},
		{strings.Repeat("tea ", 14) + `"tea tea tea"`, "the limit is 16 words ("},
		{`"` + strings.Repeat("the ", MaxPhraseWords+1) + `"`, "the limit is 8 words in"},
		{`"tea the" "the tea" -"a b c" path:"x y"`, "the limit is 8 words in"},
		{strings.Repeat("a-", MaxPhraseWords+1), "the limit is 8 words in"},
		{"日本語の検索は長いです", "the limit is 8 words in"},
	}
	for _, c := range refused {
		_, err := f.svc.Search(f.ctx, f.st.ID(), Request{Query: c.q})
		if !gitstore.IsKind(err, gitstore.KindInvalid) || !strings.Contains(err.Error(), c.limit) {
			t.Errorf("search %.60q: %v; want invalid, naming %q", c.q, err, c.limit)
		}
	}
	accepted := []string{
		letters(MaxTermBytes),
		strings.Repeat("tea ", MaxQueryWords),
		strings.Repeat(letters(250)+" ", 4) + letters(20),
		strings.Join(twoLetterPrefixes()[:MaxPrefixes], " "),
		`"` + strings.Repeat("the ", MaxPhraseWords) + `"`,
		strings.Repeat("a-", MaxPhraseWords-1) + "a",
		"staging 的 日本語の検索は長", "日本語の 検索は長い",
	}
	for _, q := range accepted {
		if _, err := f.svc.Search(f.ctx, f.st.ID(), Request{Query: q}); err != nil {
			t.Errorf("search %.60q: %v", q, err)
		}
	}
	// Typos are matched in words up to 24 letters, and in the first 8 such words.
	f.expect("abcdefghijklmnopqrstuvwz", "/a.md")
	f.expect("abcdefghijklmnopqrstuvwxz") // 25 letters: as written only
	f.expect(strings.Repeat("morning ", 8)+"stagign", "/b.md")
	f.expectSet(strings.Repeat("morning ", 7)+"stagign", "/a.md", "/b.md")
}

// TestPrefixExpansion: a prefix that stands for more than MaxPrefixExpansion words of the
// store is refused; a longer one that stands for fewer is searched.
func TestPrefixExpansion(t *testing.T) {
	f := newFixture(t, Options{})
	var words []string
	for i := range MaxPrefixExpansion + 1 {
		words = append(words, "zq"+string(rune('a'+i/676%26))+string(rune('a'+i/26%26))+string(rune('a'+i%26)))
	}
	f.write("/words.md", strings.Join(words, " ")+"\n")
	_, err := f.svc.Search(f.ctx, f.st.ID(), Request{Query: "zq*"})
	if !gitstore.IsKind(err, gitstore.KindInvalid) || !strings.Contains(err.Error(), "the limit is 1000: make the prefix longer") {
		t.Errorf("zq*: %v; want it refused", err)
	}
	f.expect("zqb*", "/words.md")
}

// TestSearchCancelled: a search whose caller went away stops, and says so.
func TestSearchCancelled(t *testing.T) {
	f := newFixture(t, Options{})
	for i := range 50 {
		f.write("/m"+itoa(i)+".md", filler(i)+"\nthe staging database\n")
	}
	f.search("staging") // the index is fresh
	ctx, cancel := context.WithCancel(f.ctx)
	cancel()
	start := time.Now()
	_, err := f.svc.Search(ctx, f.st.ID(), Request{Query: "the staging database stagign"})
	if !errors.Is(err, context.Canceled) || gitstore.IsKind(err, gitstore.KindInvalid) {
		t.Errorf("cancelled search: %v, want context.Canceled", err)
	}
	if took := time.Since(start); took > 100*time.Millisecond {
		t.Errorf("cancelled search took %s", took)
	}
}

// TestSearchBudget: a search over Options.Timeout is stopped and answered with an error
// that names the budget.
func TestSearchBudget(t *testing.T) {
	f := newFixture(t, Options{Timeout: time.Nanosecond})
	f.write("/a.md", "the staging database\n")
	var err error
	for range 100 { // the first searches wait for the index to be built
		if _, err = f.svc.Search(f.ctx, f.st.ID(), Request{Query: "staging"}); !errors.As(err, new(*UnavailableError)) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !gitstore.IsKind(err, gitstore.KindInvalid) || !strings.Contains(err.Error(), "time budget of 1ns") {
		t.Errorf("search over its budget: %v", err)
	}
}

// fuzzAllocLimit bounds what one search of FuzzQuery may allocate, on its small index. The
// costliest accepted queries allocate about a tenth of it; a word of 3,000 letters used to
// allocate 0.2 GB, one of 400,000 letters everything there was.
const fuzzAllocLimit = 64 << 20

// FuzzQuery parses and runs queries against a small index: each is searched or refused as
// invalid, nothing else, and no search allocates more than fuzzAllocLimit.
func FuzzQuery(f *testing.F) {
	fx := newFixture(f, Options{})
	fx.write("/ops/runbook.md", "How to deploy to staging:\n1. build\n2. deploy the database migrations to staging\n")
	fx.write("/preferences/tea.md", "Likes green tea. Tea in the morning, tea after lunch.\n")
	fx.write("/notes/日本.md", "日本語の検索 user_id e-mail\n")
	fx.search("tea")
	prefixes := twoLetterPrefixes()
	for _, seed := range []string{
		"deploy staging", `"exact phrase" -word path:/ops/ deplo*`, "stagign", "日本語", "user_id",
		letters(24), letters(25), letters(256), letters(257), letters(1024), letters(3000),
		strings.Repeat("tea ", 32), strings.Repeat("tea ", 33),
		strings.Join(prefixes[:4], " "), strings.Join(prefixes[:5], " "), strings.Repeat(strings.Join(prefixes, " ")+" ", 3),
		`"` + strings.Repeat("the ", 8) + `"`, strings.Repeat("a-", 128), `-"` + strings.Repeat("x ", 20),
		strings.Repeat(letters(24)+" ", 32), "path:" + strings.Repeat("/a", 100), "mem_01J" + letters(100),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, q string) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := fx.svc.Search(fx.ctx, fx.st.ID(), Request{Query: q})
		runtime.ReadMemStats(&after)
		if err != nil && !gitstore.IsKind(err, gitstore.KindInvalid) {
			t.Fatalf("search %.80q: %v", q, err)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > fuzzAllocLimit {
			t.Fatalf("search %.80q (%d bytes) allocated %d MB; the limit is %d MB", q, len(q), alloc>>20, fuzzAllocLimit>>20)
		}
	})
}
