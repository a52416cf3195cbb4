package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"

	"github.com/gitmem/gitmem/client"
	"github.com/gitmem/gitmem/gitstore"
)

// storeAPI is what the commands that work through a server need of a store. *gitstore.Store
// (the data directory opened by this process) and *client.Store (a running server's) both
// have it, so such a command prints the same whichever answers.
type storeAPI interface {
	gitstore.MemoryReader
	ID() string
	Info(ctx context.Context) (gitstore.StoreInfo, error)
	Usage(ctx context.Context) (gitstore.Usage, error)
	ReaderAt(ctx context.Context, at string) (gitstore.MemoryReader, error)
	Write(ctx context.Context, in gitstore.WriteInput) (gitstore.WriteResult, error)
	UpdateMemory(ctx context.Context, in gitstore.UpdateInput) (gitstore.WriteResult, error)
	Delete(ctx context.Context, in gitstore.DeleteInput) (gitstore.Version, error)
	Versions(ctx context.Context, f gitstore.VersionFilter) (gitstore.VersionPage, error)
	Restore(ctx context.Context, in gitstore.RestoreInput) (gitstore.WriteResult, error)
	DiffMemory(ctx context.Context, memoryID, fromID, toID string) (gitstore.MemoryDiff, error)
	Blame(ctx context.Context, memoryID string) ([]gitstore.BlameLine, error)
	Redact(ctx context.Context, in gitstore.RedactInput) (gitstore.RedactResult, error)
	GC(ctx context.Context) (gitstore.GCResult, error)
	Archive(ctx context.Context, actor gitstore.Actor) (gitstore.StoreInfo, error)
	UpdateInfo(ctx context.Context, p gitstore.StorePatch) (gitstore.StoreInfo, error)
	Revert(ctx context.Context, in gitstore.RevertInput) (gitstore.RevertResult, error)
	Expire(ctx context.Context, dryRun bool) (gitstore.ExpireReport, error)
}

// storeLister lists stores: *gitstore.DataDir and *client.Client.
type storeLister interface {
	ListStores(ctx context.Context, opts gitstore.StoreListOptions) (gitstore.StorePage, error)
}

var (
	_ storeAPI    = (*gitstore.Store)(nil)
	_ storeAPI    = (*client.Store)(nil)
	_ storeLister = (*gitstore.DataDir)(nil)
	_ storeLister = (*client.Client)(nil)
)

// target is where a command's requests go: a server (srv), or the data directory, opened by
// this process (data).
type target struct {
	srv  *client.Client
	data *gitstore.DataDir
	// via says how the server was found, for messages: "--server", "GITMEM_SERVER" or the
	// lock's holder.
	via string
}

// serverFlag is --server, else GITMEM_SERVER.
func (a *app) serverURL() (string, string) {
	if a.server != "" {
		return a.server, "--server"
	}
	if s := os.Getenv("GITMEM_SERVER"); s != "" {
		return s, "GITMEM_SERVER"
	}
	return "", ""
}

// checkServerURL refuses a server address that is not one, before any request: its
// errors otherwise said that the server does not answer, or named a query parameter.
func checkServerURL(raw, via string) error {
	u, err := url.Parse(raw)
	like := "http://127.0.0.1:7437"
	if g, gerr := url.Parse("http://" + raw); !strings.Contains(raw, "://") && gerr == nil && g.Host != "" {
		like = g.String() // a host and port without the scheme: the same with http://
	}
	bad := func(why string) error {
		return invalidf("%s %q: %s; give the server's address, like %s", via, raw, why, like)
	}
	switch {
	case err != nil || u.Host == "" || u.Opaque != "":
		return bad("not an address with a scheme and a host")
	case u.Scheme != "http" && u.Scheme != "https":
		return bad("the scheme must be http or https")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return bad("a server's address has no query or fragment")
	}
	if base, ok := apiRoute(u.Path); ok {
		// Another path is allowed: a proxy may serve gitmem below one (/api/v1/gitmem).
		like = u.Scheme + "://" + u.Host + base
		return bad("that is an API route, not the server's address")
	}
	return nil
}

// apiRoute says whether an address's path names one of the server's routes (the
// banner's .../v1/memory_stores, the MCP endpoint, a page of the UI) rather than where the
// server is. A proxy's path may hold v1 (/api/v1/gitmem): only v1 at the end, or before one
// of the server's own names, is a route.
// It returns the path before the route, where the server is.
func apiRoute(p string) (base string, ok bool) {
	segs := strings.Split(strings.Trim(p, "/"), "/")
	for i, s := range segs {
		last := i == len(segs)-1
		if s == "v1" && (last || v1Routes[segs[i+1]]) || topRoutes[s] && (last || s == "ui" || s == "git") {
			if i == 0 {
				return "", true
			}
			return "/" + strings.Join(segs[:i], "/"), true
		}
	}
	return "", false
}

// v1Routes are the names below the server's /v1; topRoutes its other routes at the top.
var (
	v1Routes  = map[string]bool{"memory_stores": true, "events": true, "version": true, "webhooks": true}
	topRoutes = map[string]bool{"mcp": true, "ui": true, "git": true, "metrics": true, "readyz": true, "livez": true}
)

// talksToServer says whether a command may use --server; the others (version, config,
// completion, help, serve) do not check it.
func talksToServer(command string) bool {
	for _, local := range []string{"gitmem version", "gitmem config", "gitmem completion", "gitmem help", "gitmem serve", "gitmem __complete"} {
		if command == local || strings.HasPrefix(command, local+" ") {
			return false
		}
	}
	return true
}

// open finds the command's target: the server named by --server or GITMEM_SERVER; else the
// data directory, opened here if it is free, or the server that holds it (its lock says
// where it listens). close releases what open took.
func (a *app) open(ctx context.Context) (t target, close func() error, err error) {
	if u, via := a.serverURL(); u != "" {
		return target{srv: client.New(u, os.Getenv("GITMEM_API_KEY")), via: via}, func() error { return nil }, nil
	}
	d, err := a.openData(ctx)
	var le *gitstore.LockedError
	if errors.As(err, &le) && le.URL != "" {
		return target{srv: client.New(le.URL, os.Getenv("GITMEM_API_KEY")), via: le.Holder}, func() error { return nil }, nil
	}
	if err != nil {
		return target{}, nil, err
	}
	return target{data: d}, d.Close, nil
}

// withTarget runs fn on the command's target. A full disk's error of the data directory
// names the directory, as withData's does.
func (a *app) withTarget(ctx context.Context, fn func(t target) error) (err error) {
	t, done, err := a.open(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := done(); err == nil {
			err = cerr
		}
		if t.local() && gitstore.IsKind(err, gitstore.KindStorage) {
			err = a.storageErr(err)
		}
	}()
	return fn(t)
}

// lister is the target's store listing.
func (t target) lister() storeLister {
	if t.srv != nil {
		return t.srv
	}
	return t.data
}

// store opens the store with an id on the target.
func (t target) store(ctx context.Context, id string) (storeAPI, error) {
	if t.srv != nil {
		return t.srv.Store(id), nil
	}
	return t.data.Store(ctx, id)
}

// createStore creates a store on the target.
func (t target) createStore(ctx context.Context, in gitstore.CreateStoreInput) (storeAPI, error) {
	if t.srv != nil {
		return t.srv.CreateStore(ctx, in)
	}
	return t.data.CreateStore(ctx, in)
}

// deleteStore deletes a store, by id, on the target.
func (t target) deleteStore(ctx context.Context, id string) error {
	if t.srv != nil {
		return t.srv.DeleteStore(ctx, id)
	}
	return t.data.DeleteStore(ctx, id)
}

// repository says where a store's repository is: its directory, or the URL git clones.
func repository(s storeAPI) string {
	if rs, ok := s.(*client.Store); ok {
		return rs.RepoURL()
	}
	return s.(*gitstore.Store).RepoPath()
}

// head is the commit of main that reads of the store reflect.
func head(ctx context.Context, s storeAPI) (string, error) {
	if rs, ok := s.(*client.Store); ok {
		return rs.Head(ctx)
	}
	return s.(*gitstore.Store).Head(), nil
}

// local reports whether the target is the data directory, opened by this process: then the
// commands that need the git program run it here, else the server does.
func (t target) local() bool { return t.srv == nil }

// withStoreAPI runs fn with the store named by ref (id, or unique name) on the command's
// target.
func (a *app) withStoreAPI(ctx context.Context, ref string, fn func(s storeAPI) error) error {
	return a.withTarget(ctx, func(t target) error {
		s, err := t.find(ctx, ref)
		if err != nil {
			return err
		}
		return fn(s)
	})
}

// find opens the store named by ref (id, or unique name) on the target.
func (t target) find(ctx context.Context, ref string) (storeAPI, error) {
	if t.srv == nil {
		s, err := findStore(ctx, t.data, ref)
		if err != nil {
			return nil, err // not s: a nil *Store would be a storeAPI that is not nil
		}
		return s, nil
	}
	id, err := resolveStore(ctx, t.srv, ref)
	if err != nil {
		return nil, err
	}
	return t.srv.Store(id), nil
}

// resolveStore finds the id of a store named by id or by a name that one store has
// (gitstore.ResolveStoreRef), among the stores that l lists. A store that is not there,
// by name or by id, is an error that says where gitmem looked and how to list the stores.
func resolveStore(ctx context.Context, l storeLister, ref string) (string, error) {
	var id string
	var err error
	var stores []gitstore.StoreInfo
	if strings.HasPrefix(ref, gitstore.StorePrefix) {
		id, err = ref, storeExists(ctx, l, ref)
	} else {
		if stores, err = allStores(ctx, l, true); err != nil {
			return "", err
		}
		id, err = gitstore.ResolveStoreRef(stores, ref)
	}
	if errors.Is(err, gitstore.ErrNoStore) { // say where it looked: a mistyped --data is a common cause
		where := ""
		switch l := l.(type) {
		case *gitstore.DataDir:
			where = " in data directory " + l.Dir()
		case *client.Client:
			where = " on " + l.URL()
		}
		return "", fmt.Errorf("%w%s (see \"gitmem stores list --all\")%s", err, where, storeSuggestion(stores, ref))
	}
	return id, err
}

// storeSuggestion is, for a name that no store has, "; did you mean NAME?" with the names
// of stores within two edits of it (one if it is of 2 or 3 bytes; a short name is near every
// short name), case aside (notes for "note" or "Notes"), or "" if none is.
func storeSuggestion(stores []gitstore.StoreInfo, ref string) string {
	var near []string
	for _, s := range stores {
		d := editDistance(strings.ToLower(ref), strings.ToLower(s.Name))
		if s.Name != "" && d <= 2 && 2*d <= len(ref) {
			near = append(near, quoteArg(s.Name))
		}
	}
	if len(near) == 0 {
		return ""
	}
	return "; did you mean " + strings.Join(near, " or ") + "?"
}

// storeExists returns an error that is gitstore.ErrNoStore if no store of l has the id. In a
// data directory it opens nothing (a store that is there but does not open is the command's
// to meet); a server it asks for the store, and returns what refused the question (a key,
// no answer) as the command would have met it.
func storeExists(ctx context.Context, l storeLister, id string) error {
	switch l := l.(type) {
	case *gitstore.DataDir:
		if _, err := os.Stat(l.Layout().StoreRepo(id)); !errors.Is(err, fs.ErrNotExist) {
			return nil
		}
	case *client.Client:
		if _, err := l.Store(id).Info(ctx); !gitstore.IsKind(err, gitstore.KindNotFound) {
			return err
		}
	default:
		return nil
	}
	return &gitstore.Error{Kind: gitstore.KindNotFound, Err: gitstore.ErrNoStore,
		Message: fmt.Sprintf("memory store %s not found", id)}
}

// needsDataDir is the error of a command that works on the data directory itself when a
// server holds it, or when a server was named.
func (a *app) needsDataDir(le *gitstore.LockedError) error {
	name := a.command
	if name == "" {
		name = "this command"
	}
	if le == nil {
		_, via := a.serverURL()
		return invalidf("%s works on a data directory, not through a server (%s is set); run it where the data directory is", name, via)
	}
	return &gitstore.Error{Kind: gitstore.KindUnavailable, Err: le,
		Message: fmt.Sprintf("%s needs the data directory %s, which %s holds at %s; stop it first", name, le.Dir, le.Holder, le.URL)}
}
