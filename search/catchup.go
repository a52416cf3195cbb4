package search

import "context"

// CatchUp brings a store's index up to the store's head as of the call and waits for it, as
// a search would: after a git push, so that the push returns when searches find it.
func (s *Service) CatchUp(ctx context.Context, storeID string) error {
	x, err := s.index(ctx, storeID)
	if err != nil {
		return err
	}
	return x.waitFresh(ctx)
}
