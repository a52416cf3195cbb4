package search

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"

	"github.com/gitmem/gitmem/gitstore"
)

// The bounds of a query. Every way in (the REST route, the memory_search tool over HTTP
// and MCP, the CLI) goes through Service.Search, and a query over them is refused there,
// before it reaches the index, with a KindInvalid error that names the limit. Without
// them one query word of 400,000 letters made bleve's fuzzy automaton allocate until the
// process died, and a few KB of prefixes took seconds of CPU. Within them the costliest
// queries found (the most frequent words, the widest prefixes, a phrase of one frequent
// word) took about 0.2 s of CPU and 35-50 MB of short-lived allocations on a store of
// 10,000 memories, against 2 ms and 0.4 MB for two plain words (BenchmarkWorstQuery); the
// cost grows with the store.
const (
	// MaxQueryBytes bounds the whole query string.
	MaxQueryBytes = 1024
	// MaxTermBytes bounds each word, prefix, "phrase", -exclusion and path: word.
	MaxTermBytes = 256
	// MaxQueryWords bounds the words of a query, as the index splits them: each word, each
	// word of a phrase, an exclusion or a path: word, and each prefix and path: filter.
	MaxQueryWords = 16
	// MaxPhraseWords bounds the words of the query's phrases together: quoted phrases,
	// exclusions, path: words, and words that split into several (user_id, e-mail, and
	// the bigrams of a word in Chinese or Japanese: 9 characters make 8). A phrase's cost
	// grows with its words times how often they occur, and bleve does not look at the
	// time budget while it looks for a phrase that is nowhere.
	MaxPhraseWords = 8
	// MaxPrefixes bounds the prefix* terms of a query.
	MaxPrefixes = 4
	// MaxPrefixExpansion bounds how many different words of a store one prefix may stand
	// for, in the content or in the paths.
	MaxPrefixExpansion = 1000
	// maxFuzzyRunes is the longest word matched with typos: the automaton that finds them
	// grows with the word (about 1.4 MB of allocations at 24 letters, 27 GB asked for at
	// 400,000). Longer words are matched as written and stemmed.
	maxFuzzyRunes = 24
	// maxFuzzyWords is how many words of a query are matched with typos, the first ones;
	// the others are matched as written and stemmed.
	maxFuzzyWords = 8
	// DefaultTimeout is the time budget of one search (Options.Timeout).
	DefaultTimeout = 2 * time.Second
)

func invalidQuery(format string, args ...any) error {
	return &gitstore.Error{Kind: gitstore.KindInvalid, Message: fmt.Sprintf(format, args...)}
}

// shown abbreviates a term of a query for an error message.
func shown(term string) string {
	if utf8.RuneCountInString(term) <= 40 {
		return term
	}
	r := []rune(term)
	return string(r[:37]) + "..."
}

// checkQueryBytes refuses a query string over MaxQueryBytes, before it is parsed.
func checkQueryBytes(q string) error {
	if len(q) > MaxQueryBytes {
		return invalidQuery("the search query is %d bytes; the limit is %d bytes", len(q), MaxQueryBytes)
	}
	return nil
}

// check refuses a parsed query over the bounds above, all but MaxPrefixExpansion, which
// depends on the index (see checkExpansion).
func (p parsedQuery) check() error {
	words, phraseWords := 0, 0
	count := func(analyzer, term string, asPhrase bool) error {
		if len(term) > MaxTermBytes {
			return invalidQuery("the search term %q is %d bytes; the limit is %d bytes per word or phrase", shown(term), len(term), MaxTermBytes)
		}
		ts := analyze(analyzer, term)
		words += len(ts)
		if len(ts) > 1 && (asPhrase || !hasIdeographic(ts)) {
			phraseWords += len(ts)
		}
		return nil
	}
	for _, group := range []struct {
		terms    []string
		analyzer string
		asPhrase bool
	}{
		{p.words, analyzerText, false},
		{p.phrases, analyzerText, true},
		{p.exclude, analyzerText, true},
		{p.pathWords, analyzerPath, true},
	} {
		for _, term := range group.terms {
			if err := count(group.analyzer, term, group.asPhrase); err != nil {
				return err
			}
		}
	}
	for _, pre := range p.prefixes {
		if len(pre) > MaxTermBytes {
			return invalidQuery("the search prefix %q is %d bytes; the limit is %d bytes", shown(pre), len(pre), MaxTermBytes)
		}
	}
	if len(p.prefixes) > MaxPrefixes {
		return invalidQuery("the search query has %d prefix* terms; the limit is %d prefix terms per query", len(p.prefixes), MaxPrefixes)
	}
	words += len(p.prefixes) + len(p.pathFilters)
	if words > MaxQueryWords {
		return invalidQuery("the search query has %d words; the limit is %d words (each word of a phrase, each prefix* and each path: filter counts)", words, MaxQueryWords)
	}
	if phraseWords > MaxPhraseWords {
		return invalidQuery(`the phrases of the search query have %d words together; the limit is %d words in "phrases", -exclusions, path: words and words joined by punctuation (user_id)`, phraseWords, MaxPhraseWords)
	}
	return nil
}

// prefixTerm returns the term of the index that a prefix* stands for, folded as the index
// folds words, and false if the prefix is not matched as a prefix (it analyzes into
// several words, or into ideographs).
func prefixTerm(p string) (string, bool) {
	ts := analyze(analyzerText, p)
	if len(ts) != 1 || ts[0].Type == analysis.Ideographic {
		return "", false
	}
	return string(ts[0].Term), true
}

// checkExpansion refuses a query whose prefixes stand for more than MaxPrefixExpansion
// words of idx in one field. It reads at most that many words of the index's dictionary
// per prefix and field.
func (p parsedQuery) checkExpansion(idx bleve.Index) error {
	for _, pre := range p.prefixes {
		term, ok := prefixTerm(pre)
		if !ok {
			continue
		}
		for _, field := range []string{fieldContent, fieldPath} {
			n, err := countPrefix(idx, field, term, MaxPrefixExpansion+1)
			if err != nil {
				return err
			}
			if n > MaxPrefixExpansion {
				return invalidQuery("the prefix %s* stands for more than %d different words in this store; the limit is %d: make the prefix longer", shown(pre), MaxPrefixExpansion, MaxPrefixExpansion)
			}
		}
	}
	return nil
}

// countPrefix counts the words of a field that start with prefix, up to most.
func countPrefix(idx bleve.Index, field, prefix string, most int) (n int, err error) {
	d, err := idx.FieldDictPrefix(field, []byte(prefix))
	if err != nil {
		return 0, fmt.Errorf("read the words of %s: %w", field, err)
	}
	defer func() {
		if cerr := d.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	for n < most {
		e, err := d.Next()
		if err != nil {
			return n, fmt.Errorf("read the words of %s: %w", field, err)
		}
		if e == nil {
			break
		}
		n++
	}
	return n, nil
}

// overBudget turns the error of a search whose time budget ran out into one that says so;
// other errors, and a caller that went away, pass as they are.
func overBudget(parent context.Context, budget time.Duration, err error) error {
	if errors.Is(err, context.DeadlineExceeded) && parent.Err() == nil {
		return invalidQuery("the search was stopped at its time budget of %s; search with fewer or rarer words, fewer prefixes, or within a path_prefix", budget)
	}
	return err
}
