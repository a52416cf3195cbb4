package search

import (
	"bytes"
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/char/asciifolding"
	"github.com/blevesearch/bleve/v2/analysis/lang/cjk"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/token/porter"
	bunicode "github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/registry"
	bindex "github.com/blevesearch/bleve_index_api"
	"golang.org/x/text/unicode/norm"

	_ "github.com/blevesearch/bleve/v2/analysis/analyzer/custom" // the "custom" analyzer type
)

// The index's fields. A document is one memory, named by its path.
const (
	fieldContent = "content" // words as written, accents and case folded: phrases, prefixes, typos
	fieldStem    = "stem"    // the words' stems where they differ from the words (weights.go), so that "deploying" finds "deploy"
	fieldPath    = "path"    // the path's words
	fieldPathKey = "path_kw" // the whole path, for a filter of one memory
	fieldDirs    = "dirs"    // the folders that hold the memory ("/a/", "/a/b/"), for folder filters
	fieldID      = "id"      // the memory id
	fieldBlob    = "blob"    // the content's blob, stored, to build snippets from
)

// The analyzers. Every language is indexed the same way: Unicode word boundaries (UAX #29),
// lower case, NFKC and accents folded to ASCII (so "resume" finds "résumé" and "strasse"
// finds "Straße"), and Chinese, Japanese and Korean runs as overlapping bigrams, since those
// scripts put no spaces between words.
const (
	analyzerText  = "gitmem_text"
	analyzerStems = "gitmem_stem_index" // a memory's words: stems that differ from the word
	analyzerPath  = "gitmem_path"

	charPunct   = "gitmem_punct"
	filterFold  = "gitmem_fold"
	filterStems = "gitmem_stems"
	filterWidth = cjk.WidthName
	filterBigrm = cjk.BigramName
)

// indexFormat changes whenever the mapping or the analyzers do: an index of another format
// is rebuilt.
const indexFormat = "3"

// punctFilter blanks the characters that join words in UAX #29 but that people search
// across: "." and "_" ("notes.md", "user_id") and apostrophes ("l'hôtel", "John's"). Each
// becomes as many spaces as it has bytes, so that offsets stay true.
type punctFilter struct{}

func (punctFilter) Filter(in []byte) []byte {
	out := in
	for i := 0; i < len(in); {
		r, n := utf8.DecodeRune(in[i:])
		switch r {
		case '.', '_', '\'', '’', '‘', 'ʼ':
			if &out[0] == &in[0] {
				out = bytes.Clone(in)
			}
			for k := range n {
				out[i+k] = ' '
			}
		}
		i += n
	}
	return out
}

// foldFilter folds each token to NFKC and then to ASCII where a Latin letter has an ASCII
// base. It changes tokens' terms but never their offsets, which snippets rely on: bleve's
// asciifolding char filter folds the text before tokenizing and shifts them.
type foldFilter struct {
	ascii *asciifolding.AsciiFoldingFilter
}

func (f foldFilter) Filter(in analysis.TokenStream) analysis.TokenStream {
	for _, t := range in {
		if t.Type != analysis.Ideographic && isHangul(t.Term) {
			// Korean attaches particles to words ("김치를"): bigrams find the words, as
			// for Chinese and Japanese.
			t.Type = analysis.Ideographic
		}
		if t.Type == analysis.Ideographic {
			continue // the bigram filter cuts these by byte offset: leave their bytes alone
		}
		if !isASCII(t.Term) {
			t.Term = f.ascii.Filter(norm.NFKC.Bytes(t.Term))
		}
	}
	return in
}

// sameStem is the stem field's term where a word is its own stem. It keeps the field's
// length equal to the content's, which BM25 normalises by; no query asks for it.
const sameStem = "\x00"

// stemsFilter stems each token, and keeps the stem only where it differs from the token:
// elsewhere the content field has the same term at the same place.
type stemsFilter struct{ porter *porter.PorterStemmer }

func (f stemsFilter) Filter(in analysis.TokenStream) analysis.TokenStream {
	terms := make([][]byte, len(in))
	for i, t := range in {
		terms[i] = t.Term
	}
	in = f.porter.Filter(in)
	for i, t := range in {
		if bytes.Equal(t.Term, terms[i]) {
			t.Term = []byte(sameStem)
		}
	}
	return in
}

func isHangul(b []byte) bool {
	r, _ := utf8.DecodeRune(b)
	return unicode.Is(unicode.Hangul, r)
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

func init() {
	err := registry.RegisterCharFilter(charPunct, func(map[string]any, *registry.Cache) (analysis.CharFilter, error) {
		return punctFilter{}, nil
	})
	if err != nil {
		panic(err)
	}
	err = registry.RegisterTokenFilter(filterFold, func(map[string]any, *registry.Cache) (analysis.TokenFilter, error) {
		return foldFilter{asciifolding.New()}, nil
	})
	if err != nil {
		panic(err)
	}
	err = registry.RegisterTokenFilter(filterStems, func(map[string]any, *registry.Cache) (analysis.TokenFilter, error) {
		return stemsFilter{porter.NewPorterStemmer()}, nil
	})
	if err != nil {
		panic(err)
	}
	if queryMapping, err = newMapping(); err != nil {
		panic(err)
	}
}

// queryMapping analyzes query text the way documents were analyzed.
var queryMapping *mapping.IndexMappingImpl

// newMapping builds the index mapping. BM25 ranks (bleve's default is TF-IDF).
func newMapping() (*mapping.IndexMappingImpl, error) {
	im := mapping.NewIndexMapping()
	im.ScoringModel = bindex.BM25Scoring
	im.StoreDynamic, im.IndexDynamic, im.DocValuesDynamic = false, false, false
	common := []string{lowercase.Name, filterFold, filterWidth, filterBigrm}
	analyzers := map[string][]string{
		analyzerText:  common,
		analyzerPath:  common,
		analyzerStems: append(common, filterStems),
	}
	for name, filters := range analyzers {
		err := im.AddCustomAnalyzer(name, map[string]any{
			"type": "custom", "char_filters": []string{charPunct}, "tokenizer": bunicode.Name, "token_filters": filters,
		})
		if err != nil {
			return nil, fmt.Errorf("analyzer %s: %w", name, err)
		}
	}
	text := func(name, analyzer string) *mapping.FieldMapping {
		f := mapping.NewTextFieldMapping()
		f.Name, f.Analyzer = name, analyzer
		f.Store, f.IncludeInAll, f.DocValues = false, false, false
		f.IncludeTermVectors = true // phrases and snippet offsets
		return f
	}
	kw := func(name string, index, store bool) *mapping.FieldMapping {
		f := mapping.NewKeywordFieldMapping()
		f.Name, f.Analyzer = name, keyword.Name
		f.Index, f.Store, f.IncludeInAll, f.DocValues, f.IncludeTermVectors = index, store, false, false, false
		return f
	}
	doc := mapping.NewDocumentStaticMapping()
	doc.AddFieldMappingsAt(fieldContent, text(fieldContent, analyzerText), text(fieldStem, analyzerStems))
	doc.AddFieldMappingsAt(fieldPath, text(fieldPath, analyzerPath), kw(fieldPathKey, true, false))
	doc.AddFieldMappingsAt(fieldDirs, kw(fieldDirs, true, false))
	doc.AddFieldMappingsAt(fieldID, kw(fieldID, true, true))
	doc.AddFieldMappingsAt(fieldBlob, kw(fieldBlob, false, true))
	im.DefaultMapping = doc
	im.DefaultAnalyzer = analyzerText
	if err := im.Validate(); err != nil {
		return nil, err
	}
	return im, nil
}

// document is what the index holds of one memory.
func document(memoryID, path, blob, content string) map[string]any {
	return map[string]any{fieldID: memoryID, fieldPath: path, fieldDirs: dirsOf(path), fieldBlob: blob, fieldContent: content}
}

// dirsOf lists the folders that hold the memory at path, outermost first, each ending in
// "/": /a/b/c.md is in /a/ and /a/b/ (and in /, which holds every memory and is not listed).
func dirsOf(path string) []string {
	var out []string
	for i := 1; i < len(path); i++ {
		if path[i] == '/' {
			out = append(out, path[:i+1])
		}
	}
	return out
}
