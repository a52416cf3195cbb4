package fsmount

import (
	"context"

	"github.com/gitmem/gitmem/gitstore"
)

// The kernel interrupts a request whose caller gets a signal (a Go program's goroutines get
// them for preemption, a profiler's every 10 ms), and go-fuse then cancels its context. A
// write cancelled halfway would leave the caller with EINTR for a version that may exist;
// the FUSE protocol lets a file system finish the request and answer it instead, and the
// kernel waits for that answer. So the store is asked without the request's cancellation.

// steadyStore is a Store whose calls ignore the cancellation of their context.
type steadyStore struct{ s Store }

func (s steadyStore) ID() string { return s.s.ID() }

func (s steadyStore) Get(ctx context.Context, id string, withContent bool) (gitstore.Memory, error) {
	return s.s.Get(context.WithoutCancel(ctx), id, withContent)
}

func (s steadyStore) GetByPath(ctx context.Context, path string, withContent bool) (gitstore.Memory, error) {
	return s.s.GetByPath(context.WithoutCancel(ctx), path, withContent)
}

func (s steadyStore) List(ctx context.Context, opts gitstore.ListOptions) (gitstore.ListPage, error) {
	return s.s.List(context.WithoutCancel(ctx), opts)
}

func (s steadyStore) Write(ctx context.Context, in gitstore.WriteInput) (gitstore.WriteResult, error) {
	return s.s.Write(context.WithoutCancel(ctx), in)
}

func (s steadyStore) UpdateMemory(ctx context.Context, in gitstore.UpdateInput) (gitstore.WriteResult, error) {
	return s.s.UpdateMemory(context.WithoutCancel(ctx), in)
}

func (s steadyStore) Delete(ctx context.Context, in gitstore.DeleteInput) (gitstore.Version, error) {
	return s.s.Delete(context.WithoutCancel(ctx), in)
}

func (s steadyStore) MovePath(ctx context.Context, in gitstore.MovePathInput) ([]gitstore.WriteResult, error) {
	return s.s.MovePath(context.WithoutCancel(ctx), in)
}

// steadyReader is a MemoryReader whose calls ignore the cancellation of their context.
type steadyReader struct{ r gitstore.MemoryReader }

func (s steadyReader) Get(ctx context.Context, id string, withContent bool) (gitstore.Memory, error) {
	return s.r.Get(context.WithoutCancel(ctx), id, withContent)
}

func (s steadyReader) GetByPath(ctx context.Context, path string, withContent bool) (gitstore.Memory, error) {
	return s.r.GetByPath(context.WithoutCancel(ctx), path, withContent)
}

func (s steadyReader) List(ctx context.Context, opts gitstore.ListOptions) (gitstore.ListPage, error) {
	return s.r.List(context.WithoutCancel(ctx), opts)
}
