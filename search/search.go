package search

import (
	"context"
	"fmt"

	"github.com/blevesearch/bleve/v2"
	bsearch "github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/gitmem/gitmem/gitstore"
)

// typosBelow is how few hits the words as written must find for words to match with a
// typo too: a default page.
const typosBelow = 10

// search answers a request from an index that reflects at least the store's head as of the
// call: it waits for the indexer only if main moved since the last catch-up.
func (x *storeIndex) search(ctx context.Context, req Request, p parsedQuery) (*Result, error) {
	_, listing, err := p.build(req.PathPrefix, false, nil) // refuses a bad query before any wait
	if err != nil {
		return nil, err
	}
	head, err := x.st.Latest(ctx)
	if err != nil {
		return nil, err
	}
	if x.published.Load().(string) != head || head == "" {
		if err := x.waitFresh(ctx); err != nil {
			return nil, err
		}
	}
	sr := bleve.NewSearchRequestOptions(nil, req.Limit, 0, false)
	sr.Fields = []string{fieldID, fieldBlob}
	// Where the hits matched, for their snippets: found for the page's hits alone, after
	// the search (matchLocations), since a search asked for them decodes the positions of
	// every match in the store, most of a frequent word's cost at 100,000 memories. A
	// query of phrases only finds them in the search: a phrase's match needs its positions.
	sr.IncludeLocations = len(p.words) == 0 && len(p.prefixes) == 0 && !listing
	if listing {
		sr.SortBy([]string{"_id"})
	}
	x.view.RLock()
	idx, commit := x.idx, x.commit
	if idx == nil {
		x.view.RUnlock()
		return nil, &UnavailableError{StoreID: x.st.ID()}
	}
	budget := x.svc.opts.Timeout
	bctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	err = p.checkExpansion(idx)
	var res *bleve.SearchResult
	var counts termCounts // a listing scores nothing: no counts to weigh by
	var ic *indexCounts
	if err == nil && !listing {
		if ic, err = newIndexCounts(bctx, idx); err == nil {
			counts = ic
		}
	}
	if err == nil {
		sr.Query, _, err = p.build(req.PathPrefix, false, counts)
	}
	if err == nil {
		res, err = idx.SearchInContext(bctx, sr)
	}
	if err == nil && !listing && res.Total < typosBelow && p.mayHaveTypos() {
		// Few matches as written: match words with a typo too. Matching typos always cost
		// most of a search of a frequent word at 100,000 memories (each expands into the
		// dictionary's neighbours), for hits ranked below the exact ones anyway. The bound
		// is fixed, not the page's size, so that the total does not depend on the page.
		// This search asks for the locations itself: a second search would expand the
		// typos again, most of its cost.
		var fq query.Query
		if fq, _, err = p.build(req.PathPrefix, true, counts); err == nil {
			sr.Query, sr.IncludeLocations = fq, true
			res, err = idx.SearchInContext(bctx, sr)
		}
	}
	locs := map[string]bsearch.FieldTermLocationMap{}
	if err == nil && !listing {
		if sr.IncludeLocations {
			for _, h := range res.Hits {
				locs[h.ID] = h.Locations
			}
		} else {
			locs, err = matchLocations(bctx, idx, p, res.Hits)
		}
	}
	if ic != nil {
		ic.close() // before the index may close, once unlocked
	}
	x.view.RUnlock()
	if err = overBudget(ctx, budget, err); err != nil {
		if gitstore.ErrorKind(err) == gitstore.KindInvalid {
			return nil, err
		}
		return nil, fmt.Errorf("search memory store %s: %w", x.st.ID(), err)
	}
	out := &Result{Commit: commit, Total: res.Total, Hits: make([]Hit, 0, len(res.Hits))}
	for _, h := range res.Hits {
		id, _ := h.Fields[fieldID].(string)
		blob, _ := h.Fields[fieldBlob].(string)
		hit := Hit{MemoryID: id, Path: h.ID, Score: h.Score}
		if listing {
			hit.Score = 0
		}
		// The blob the index holds for this hit: the text its offsets point into, even if
		// the memory changed since.
		content, err := x.st.Blob(ctx, blob)
		if err != nil {
			return nil, fmt.Errorf("read %s for its snippets: %w", h.ID, err)
		}
		hit.Snippets = snippets(content, locs[h.ID], req.Snippets)
		out.Hits = append(out.Hits, hit)
	}
	return out, nil
}

// matchLocations finds where the words, prefixes and phrases of p (as written: the search
// that found hits matched no typos) matched in each of hits: a second search, over those
// documents only and without p's exclusions and filters, which the hits passed already. Both
// searches run under the same read lock of the published index, so they see the same
// documents.
func matchLocations(ctx context.Context, idx bleve.Index, p parsedQuery, hits bsearch.DocumentMatchCollection) (map[string]bsearch.FieldTermLocationMap, error) {
	locs := make(map[string]bsearch.FieldTermLocationMap, len(hits))
	if len(hits) == 0 {
		return locs, nil
	}
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	// A conjunction, not a filter: the few documents lead, and the words' searchers skip
	// to them; a filter would walk every match of the words.
	must, should, err := p.matching(false, textFields, nil) // the fields that snippets show
	if err != nil {
		return nil, err
	}
	q := query.NewConjunctionQuery([]query.Query{query.NewDocIDQuery(ids), query.NewBooleanQuery(must, should, nil)})
	sr := bleve.NewSearchRequestOptions(q, len(ids), 0, false)
	sr.IncludeLocations = true
	sr.Score = "none"
	res, err := idx.SearchInContext(ctx, sr)
	if err != nil {
		return nil, err
	}
	for _, h := range res.Hits {
		locs[h.ID] = h.Locations
	}
	return locs, nil
}
