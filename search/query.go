package search

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/gitmem/gitmem/gitstore"
)

// The syntax of a query, for people and models alike. It never fails to parse: whatever is
// not syntax is searched as words.
//
//	deploy staging        words: a memory matching more of them, more often, ranks higher
//	"exact phrase"        a phrase, required
//	deplo*                words that start with deplo
//	-word, -"a phrase"    excludes memories that contain it
//	path:/projects/       only memories below /projects/ (path:/a/b.md: that memory, or below /a/b.md/)
//	path:notes            only memories whose path has the word notes
//	mem_01J…              the memory with that id ranks first
//
// Words match in any case and without their accents, in their stemmed form too
// ("deploying" finds "deploy"), and with one typo (two for words of 8 letters or more) when
// they have minFuzzyRunes to maxFuzzyRunes letters and no digits (the first maxFuzzyWords
// such words of a query). Upper-case AND and OR are
// ignored: words are optional anyway. A query has bounds (see MaxQueryBytes and the limits
// beside it); one over them is refused, not cut.
type parsedQuery struct {
	words, prefixes, phrases []string
	exclude                  []string // words and phrases
	pathWords                []string
	pathFilters              []string // memory paths or directory prefixes ending in "/"
}

const (
	minFuzzyRunes  = 4
	minPrefixRunes = 2
)

// Relative weights of a word's matches: the words as written count most, a stemmed match
// less, a typo least; a word of the path counts more than one of the content, since paths
// name what a memory is about.
const (
	boostContent = 1.0
	boostStem    = 0.6
	boostPath    = 1.5
	boostFuzzy   = 0.2
	boostID      = 10
)

func parseQuery(q string) parsedQuery {
	var p parsedQuery
	for rest := strings.TrimSpace(q); rest != ""; rest = strings.TrimLeftFunc(rest, unicode.IsSpace) {
		negate := false
		if rest[0] == '-' && len(rest) > 1 && !unicode.IsSpace(rune(rest[1])) {
			negate, rest = true, rest[1:]
		}
		isPath := false
		if len(rest) > 5 && strings.EqualFold(rest[:5], "path:") && !unicode.IsSpace(rune(rest[5])) {
			isPath, rest = true, rest[5:]
		}
		var tok string
		quoted := rest[0] == '"'
		if quoted {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				tok, rest = rest[1:], ""
			} else {
				tok, rest = rest[1:1+end], rest[2+end:]
			}
		} else {
			end := strings.IndexFunc(rest, unicode.IsSpace)
			if end < 0 {
				end = len(rest)
			}
			tok, rest = rest[:end], rest[end:]
		}
		tok = strings.TrimSpace(tok)
		switch {
		case tok == "":
		case isPath && strings.HasPrefix(tok, "/"):
			p.pathFilters = append(p.pathFilters, tok)
		case isPath:
			p.pathWords = append(p.pathWords, tok)
		case negate:
			p.exclude = append(p.exclude, tok)
		case quoted:
			p.phrases = append(p.phrases, tok)
		case tok == "AND" || tok == "OR":
		case strings.HasSuffix(tok, "*") && utf8.RuneCountInString(strings.TrimRight(tok, "*")) >= minPrefixRunes:
			p.prefixes = append(p.prefixes, strings.TrimRight(tok, "*"))
		default:
			p.words = append(p.words, strings.Trim(tok, "*"))
		}
	}
	return p
}

// analyze returns the tokens of text under one of the index's analyzers.
func analyze(analyzer, text string) analysis.TokenStream {
	ts, err := queryMapping.AnalyzeText(analyzer, []byte(text))
	if err != nil {
		return nil // only an unknown analyzer fails, and ours are registered at init
	}
	return ts
}

func hasIdeographic(ts analysis.TokenStream) bool {
	for _, t := range ts {
		if t.Type == analysis.Ideographic {
			return true
		}
	}
	return false
}

// fieldAnalyzer names the analyzer of each text field that match and phrase ask: bleve finds
// the analyzer of a field mapped under another property's name only in type mappings, and
// would fall back to the default analyzer. The stem field is asked for by terms alone,
// stemmed as the index stems them (stemClauses, stemOf).
var fieldAnalyzer = map[string]string{fieldContent: analyzerText, fieldPath: analyzerPath}

func match(field, text string, boost float64) query.Query {
	q := query.NewMatchQuery(text)
	q.SetField(field)
	q.Analyzer = fieldAnalyzer[field]
	q.SetBoost(boost)
	return q
}

func phrase(field, text string, boost float64) query.Query {
	q := query.NewMatchPhraseQuery(text)
	q.SetField(field)
	q.Analyzer = fieldAnalyzer[field]
	q.SetBoost(boost)
	return q
}

// wordQuery matches one word anywhere it can: as written, stemmed, in the path, with a
// typo, or as a memory id. A word that analyzes into several tokens ("user_id", "e-mail")
// is matched as a phrase of them, as written, except in scripts without spaces, where the
// query's bigrams are matched each and rank by how many are found. typos is how many more
// words of the query may be matched with typos; wordQuery takes one if it uses it. counts
// weigh its parts (stemClauses); nil leaves their weights as they are, for a search whose
// scores are not read.
func wordQuery(w string, typos *int, sc scope, counts termCounts) (query.Query, error) {
	ts := analyze(analyzerText, w)
	if len(ts) == 0 {
		return nil, nil
	}
	var others []query.Query // the parts that match other than by the word's text
	if sc == allFields {
		others = append(others, match(fieldPath, w, boostPath))
	}
	if term, ok := typoTerm(ts); *typos > 0 && ok {
		*typos--
		f := query.NewFuzzyQuery(term)
		f.SetField(fieldContent)
		f.SetFuzziness(1)
		if utf8.RuneCountInString(term) >= 8 {
			f.SetFuzziness(2)
		}
		f.SetPrefix(1) // typos in the first letter are rare, and the prefix makes it cheap
		f.SetBoost(boostFuzzy)
		others = append(others, f)
	}
	if strings.HasPrefix(w, gitstore.MemoryPrefix) && sc == allFields {
		others = append(others, termQuery(fieldID, w, boostID))
	}
	var qs []query.Query
	scale := 1.0
	if len(ts) == 1 && ts[0].Type != analysis.Ideographic {
		var err error
		if qs, scale, err = stemClauses(string(ts[0].Term), len(others), counts); err != nil {
			return nil, err
		}
	} else {
		// No stem part (the stem field holds single words): a memory that has the word as
		// written matches one part fewer than with one, which weighs as stemClauses says.
		scale = float64(len(others)+1) / float64(len(others)+2)
		if hasIdeographic(ts) {
			qs = append(qs, match(fieldContent, w, scale*2*(boostContent+boostStem)))
		} else {
			qs = append(qs, phrase(fieldContent, w, scale*2*(boostContent+boostStem)))
		}
	}
	for _, q := range others {
		q.(query.BoostableQuery).SetBoost(q.(query.BoostableQuery).Boost() * scale)
	}
	return query.NewDisjunctionQuery(append(qs, others...)), nil
}

// typoTerm returns the term to match with typos for a word that analyzed into ts: a word
// that is one term of letters only, of a length fuzzyLength allows.
func typoTerm(ts analysis.TokenStream) (string, bool) {
	if len(ts) != 1 {
		return "", false
	}
	term := string(ts[0].Term)
	return term, isWord(term) && fuzzyLength(term)
}

// mayHaveTypos reports whether build with fuzzy matches anything more than without: some
// word has a typo term (wordQuery), counting the prefixes matched as words (prefixQuery).
func (p parsedQuery) mayHaveTypos() bool {
	words := slices.Clone(p.words)
	for _, w := range p.prefixes {
		if _, ok := prefixTerm(w); !ok {
			words = append(words, w)
		}
	}
	for _, w := range words {
		if _, ok := typoTerm(analyze(analyzerText, w)); ok {
			return true
		}
	}
	return false
}

// fuzzyLength reports whether a word is long enough to be matched with a typo, and short
// enough that the automaton that finds its typos stays small.
func fuzzyLength(term string) bool {
	n := utf8.RuneCountInString(term)
	return n >= minFuzzyRunes && n <= maxFuzzyRunes
}

// isWord reports whether a term is letters only: identifiers and numbers ("token12",
// "v2") are not matched with typos, where one character makes another thing.
func isWord(term string) bool {
	for _, r := range term {
		if !unicode.IsLetter(r) {
			return false
		}
	}
	return true
}

// prefixQuery matches the words of content and path (of content alone in textFields) that
// start with p, folded as the index folds them.
func prefixQuery(p string, typos *int, sc scope, counts termCounts) (query.Query, error) {
	term, ok := prefixTerm(p)
	if !ok {
		return wordQuery(p, typos, sc, counts)
	}
	fields := []string{fieldContent, fieldPath}
	if sc == textFields {
		fields = fields[:1]
	}
	var qs []query.Query
	for _, field := range fields {
		q := query.NewPrefixQuery(term)
		q.SetField(field)
		qs = append(qs, q)
	}
	return query.NewDisjunctionQuery(qs), nil
}

// folderQuery matches the memories at or below a path: "/a/" is a directory; "/a" is the
// memory /a or the directory /a/. It is one term of the index's folders (a memory's dirs) or
// two, and scores nothing (boost 0), so that a search of words can lead with it: the words'
// searchers then skip to the few memories of a folder, rather than walk all their matches
// through a filter.
func folderQuery(p string) query.Query {
	below := termQuery(fieldDirs, strings.TrimSuffix(p, "/")+"/", 0)
	if strings.HasSuffix(p, "/") {
		return below
	}
	at := termQuery(fieldPathKey, p, 0)
	return query.NewDisjunctionQuery([]query.Query{at, below})
}

// scope is which fields the words of a query match.
type scope int

const (
	allFields  scope = iota // content, stems, path and ids: what a search finds and ranks by
	textFields              // content and stems: what snippets show (matchLocations)
)

// matching returns the parts of the bleve query of p that find and score its words,
// prefixes and phrases, in the fields of sc: phrases must match, the others should. (build
// adds what only selects: exclusions and filters.) counts weigh the words' parts
// (stemClauses); nil where scores are not read.
func (p parsedQuery) matching(fuzzy bool, sc scope, counts termCounts) (must, should []query.Query, err error) {
	typos := 0
	if fuzzy {
		typos = maxFuzzyWords
	}
	for _, w := range p.words {
		q, err := wordQuery(w, &typos, sc, counts)
		if err != nil {
			return nil, nil, err
		}
		should = appendQuery(should, q)
	}
	for _, w := range p.prefixes {
		q, err := prefixQuery(w, &typos, sc, counts)
		if err != nil {
			return nil, nil, err
		}
		should = appendQuery(should, q)
	}
	for _, ph := range p.phrases {
		if len(analyze(analyzerText, ph)) > 0 {
			must = append(must, phrase(fieldContent, ph, boostContent))
		}
	}
	return must, should, nil
}

// appendQuery appends q to qs unless it is nil (a word that analyzes into nothing).
func appendQuery(qs []query.Query, q query.Query) []query.Query {
	if q == nil {
		return qs
	}
	return append(qs, q)
}

// build turns a parsed query into a bleve query. listing is true when the query only
// filters (no words), so that the caller orders by path instead of by score. counts weigh
// the words' parts (stemClauses): nil to check a query before there is an index to read.
func (p parsedQuery) build(pathPrefix string, fuzzy bool, counts termCounts) (q query.Query, listing bool, err error) {
	must, should, err := p.matching(fuzzy, allFields, counts)
	if err != nil {
		return nil, false, err
	}
	var mustNot []query.Query
	var filters []query.Query
	for _, w := range p.pathWords {
		if len(analyze(analyzerPath, w)) > 0 {
			filters = append(filters, phrase(fieldPath, w, boostPath))
		}
	}
	for _, x := range p.exclude {
		if len(analyze(analyzerText, x)) > 0 {
			mustNot = append(mustNot, phrase(fieldContent, x, 1), phrase(fieldPath, x, 1))
		}
	}
	prefixes := p.pathFilters
	if pathPrefix != "" {
		prefixes = append(prefixes, pathPrefix)
	}
	var folders []query.Query
	everything := false // path:/, which every memory is below
	for _, f := range prefixes {
		if f == "/" {
			everything = true
			continue
		}
		if err := gitstore.ValidatePath(strings.TrimSuffix(f, "/")); err != nil {
			return nil, false, err
		}
		folders = append(folders, folderQuery(f))
	}
	if len(must) == 0 && len(should) == 0 {
		if len(filters) == 0 && len(folders) == 0 && !everything {
			msg := "the search query has no words to search for"
			if len(p.exclude) > 0 { // -word alone: what to leave out of nothing
				msg += `, only ones to leave out (-word): add a word to find, or path:/dir/ to list a folder (path:/ every memory)`
			}
			return nil, false, &gitstore.Error{Kind: gitstore.KindInvalid, Message: msg}
		}
		// A listing, ordered by path by the caller: the folders' memories, or all.
		must, listing = folders, true
		if len(must) == 0 {
			must = []query.Query{query.NewMatchAllQuery()}
		}
		folders = nil
	}
	b := query.NewBooleanQuery(must, should, mustNot)
	switch len(filters) {
	case 0:
	case 1:
		b.AddFilter(filters[0])
	default:
		b.AddFilter(query.NewConjunctionQuery(filters))
	}
	if len(folders) > 0 {
		return query.NewConjunctionQuery(append([]query.Query{b}, folders...)), listing, nil
	}
	return b, listing, nil
}
