package search

import (
	"fmt"
	"github.com/gitmem/gitmem/gitstore"
)

// Request is one search of a store.
type Request struct {
	// Query is what to look for, in the syntax of parsedQuery: words, "phrases", prefix*,
	// -exclusions, path: filters. It is at most MaxQueryBytes long, and within the bounds
	// beside it.
	Query string
	// PathPrefix, if set, keeps only the memories below it ("/projects/"; "/projects" means
	// the same, or the memory /projects).
	PathPrefix string
	// Limit is how many hits to return, 1 to MaxLimit (default 10).
	Limit int
	// Snippets is how many matching lines to return per hit, 0 to 20 (default 3).
	Snippets int
}

// MaxLimit bounds Request.Limit.
const MaxLimit = 100

// MaxSnippets bounds Request.Snippets.
const MaxSnippets = 20

func (r *Request) check() error {
	if err := checkQueryBytes(r.Query); err != nil {
		return err
	}
	switch {
	case r.Limit == 0:
		r.Limit = 10
	case r.Limit < 1 || r.Limit > MaxLimit:
		return &gitstore.Error{Kind: gitstore.KindInvalid, Message: fmt.Sprintf("limit must be between 1 and %d", MaxLimit)}
	}
	switch {
	case r.Snippets == 0:
		r.Snippets = 3
	case r.Snippets < 0 || r.Snippets > MaxSnippets:
		return &gitstore.Error{Kind: gitstore.KindInvalid, Message: fmt.Sprintf("snippets must be between 0 and %d", MaxSnippets)}
	}
	return nil
}

// Result is the answer to a search. Its JSON form is what every interface shows.
type Result struct {
	// Commit is the commit of main that the index reflected when it was searched: every
	// write answered before the search began is in it.
	Commit string `json:"commit"`
	// Total is how many memories matched; Hits holds the best of them, best first.
	Total uint64 `json:"total"`
	Hits  []Hit  `json:"hits"`
}

// Hit is one memory that matched.
type Hit struct {
	MemoryID string    `json:"memory_id"`
	Path     string    `json:"path"`
	Score    float64   `json:"score"`
	Snippets []Snippet `json:"snippets"` // matching lines, in line order
}
