package search

import (
	"context"
	"fmt"
	"math"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/token/porter"
	"github.com/blevesearch/bleve/v2/search/query"
	bindex "github.com/blevesearch/bleve_index_api"
)

// A word's matches in its other forms. The stem field holds a word's stem only where the
// stem differs from the word ("user" for "users", nothing but sameStem for "user"), so that
// a search of a word that is its own stem walks its memories once, not once in the content
// and again in the stems: at 100,000 memories that was half the cost of a search of one or
// two words. A word is then found in its other forms by up to three parts of a query,
// weighed so that two kinds of memory score as they did when the stem field held every
// word's stem: a memory with the word as written, or with another form only (when nothing
// else of the word, its path or a typo, matches too). bleve weighs a part by its boost times
// its idf squared, and scales a disjunction's score by the share of its parts that matched
// (coord); the weights below undo what the new parts change in both. A memory with the word
// as written and another form too matches as many parts as before, one of them weighed more:
// it scores up to twice as much as it did, which no weights of parts can undo (coord is the
// memory's, not the part's).

// termCounts tells how many memories an index holds, and how many of them hold a term in a
// field.
type termCounts interface {
	docs() uint64
	holding(field, term string) (uint64, error)
}

// stemClauses returns the parts of a word's query that match its text: term, the word as
// analyzed, as written and in its other forms, and the factor by which the word's other
// parts (path, typo, id) are to be scaled. counts nil: weights as if every part held the
// same memories.
func stemClauses(term string, others int, counts termCounts) ([]query.Query, float64, error) {
	stem := stemOf(term)
	if stem != term && stemOf(stem) != stem {
		// The stem is not its own stem ("environment", of "environmental", stems to
		// "environ"): the stem field holds it wherever a form of the word is, as it did
		// when it held every word's stem, and a memory with the stem written has another
		// word. The parts are those of then, weighed as then.
		return []query.Query{
			termQuery(fieldContent, term, boostContent),
			termQuery(fieldStem, stem, boostStem),
		}, 1, nil
	}
	// Every form of the word is in the stem field (the forms that are not the stem) or in
	// the content as the stem written: the word itself, if it is its own stem.
	var inStems, written uint64
	if counts != nil {
		var err error
		if inStems, err = counts.holding(fieldStem, stem); err != nil {
			return nil, 0, err
		}
		if written, err = counts.holding(fieldContent, stem); err != nil {
			return nil, 0, err
		}
	}
	// weight scales boost by (idf of every form / idf of a part that n memories hold)², so
	// that the part scores as the stem field's part did over every form. The count of every
	// form is the sum, not the union: a memory with two forms counts twice, which makes the
	// stems' weights a little lower than they were.
	weight := func(boost float64, n uint64) float64 {
		if counts == nil {
			return boost
		}
		r := idf(counts.docs(), inStems+written) / idf(counts.docs(), n)
		return boost * r * r
	}
	if stem == term {
		// A memory with the word as written matches one part, the content's, where it
		// matched the stem field's too: twice the weight.
		return []query.Query{
			termQuery(fieldContent, term, 2*(boostContent+weight(boostStem, written))),
			termQuery(fieldStem, stem, weight(boostStem, inStems)),
		}, 1, nil
	}
	// Another part, the stem as written ("user" for "users"), whose memories the stem
	// field no longer holds: every part's share shrinks in proportion.
	scale := float64(others+3) / float64(others+2)
	return []query.Query{
		termQuery(fieldContent, term, scale*boostContent),
		termQuery(fieldStem, stem, scale*weight(boostStem, inStems)),
		termQuery(fieldContent, stem, scale*weight(boostStem, written)),
	}, scale, nil
}

// termQuery matches term, as the index holds it, in field.
func termQuery(field, term string, boost float64) query.Query {
	q := query.NewTermQuery(term)
	q.SetField(field)
	q.SetBoost(boost)
	return q
}

// stemOf returns the stem of a term of the content field, as stemsFilter finds it for the
// stem field. The term is not analyzed again: folding can make a term that the analyzer
// would split ("config.files" of full-width letters, whose "." joins them in the text).
func stemOf(term string) string {
	ts := analysis.TokenStream{{Term: []byte(term)}}
	return string(stemmer.Filter(ts)[0].Term)
}

var stemmer = porter.NewPorterStemmer()

// idf is bleve's inverse document frequency under BM25, of a term that n of docs hold.
func idf(docs, n uint64) float64 {
	n = min(n, docs)
	return math.Log(1 + (float64(docs)-float64(n)+0.5)/(float64(n)+0.5))
}

// indexCounts reads termCounts from a snapshot of an index; close it after use.
type indexCounts struct {
	ctx context.Context
	r   bindex.IndexReader
	n   uint64
}

func newIndexCounts(ctx context.Context, idx bleve.Index) (*indexCounts, error) {
	adv, err := idx.Advanced()
	if err != nil {
		return nil, err
	}
	r, err := adv.Reader()
	if err != nil {
		return nil, err
	}
	n, err := r.DocCount()
	if err != nil {
		r.Close()
		return nil, err
	}
	return &indexCounts{ctx: ctx, r: r, n: n}, nil
}

func (c *indexCounts) docs() uint64 { return c.n }

func (c *indexCounts) holding(field, term string) (uint64, error) {
	tfr, err := c.r.TermFieldReader(c.ctx, []byte(term), field, false, false, false)
	if err != nil {
		return 0, fmt.Errorf("count the memories that hold %q: %w", term, err)
	}
	defer tfr.Close()
	return tfr.Count(), nil
}

func (c *indexCounts) close() error { return c.r.Close() }
