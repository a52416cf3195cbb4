package gitserve

import (
	"fmt"
	"strings"

	"github.com/gitmem/gitmem/gitstore"
)

// CheckImport checks the history of main in the bare repository at dir before it becomes a
// store (gitmem import), with the rules that a push into a new store must meet (docs/git.md):
// every file in every commit's tree a valid memory, .gitmem/ holding only a valid store.json
// that keeps one id. Two rules of pushes do not apply, because an exported store's history
// was made by gitmem: commits may carry gitmem's own trailers, and may archive the store.
// .gitmem/store.json must be on main. It returns the store's id (from store.json on main) and
// the broken rules, one line each naming the file, the rule and the commit; none means the
// history may be adopted. err is for failures to read the repository.
func CheckImport(dir string) (storeID string, problems []string, err error) {
	env := []string{"GIT_DIR=" + dir}
	objs, err := newObjects(env)
	if err != nil {
		return "", nil, err
	}
	defer objs.close()
	c := &checker{env: env, objs: objs, importing: true, reported: map[string]bool{},
		trees: map[string]bool{}, blobs: map[string]string{}}
	head, err := c.run("rev-parse", "--verify", "-q", mainRef)
	if err != nil && !isExit(err, 1) {
		return "", nil, err
	}
	if head == "" {
		c.fail(mainRef, "missing: a memory store keeps its memories on main, and the source has no main branch")
		return "", c.lines(), nil
	}
	obj, err := objs.read(head+":"+gitstore.StoreFile, maxMeta)
	if err != nil {
		return "", nil, err
	}
	if obj.missing || obj.data == nil || obj.typ != "blob" {
		c.fail("/"+gitstore.StoreFile, "missing on main: this is not the history of a gitmem store (its metadata, with the store's id, is .gitmem/store.json)")
		return "", c.lines(), nil
	}
	info, err := gitstore.ParseStoreFile(obj.data)
	if err != nil {
		c.fail("/"+gitstore.StoreFile, ruleOf(err)+" (on main)")
		return "", c.lines(), nil
	}
	if !strings.HasPrefix(info.ID, gitstore.StorePrefix) {
		c.fail("/"+gitstore.StoreFile, fmt.Sprintf("its id %q is not a memory store id (memstore_...) (on main)", info.ID))
		return "", c.lines(), nil
	}
	c.storeID = info.ID
	out, err := c.run("rev-list", "--topo-order", "--reverse", head)
	if err != nil {
		return "", nil, err
	}
	for _, h := range strings.Fields(out) {
		if err := c.checkCommit(h); err != nil {
			return "", nil, err
		}
	}
	return info.ID, c.lines(), nil
}

// CheckFetched checks the commits that a sync fetched from a remote before they are merged
// into the store's main: commits, those of the remote's history that ours lacks, parents
// before children, in the repository at dir.
// The rules are those of CheckImport (the remote's commits may be gitmem's own, with its
// trailers), and the store's secrets policy on ours applies too, so that a secret reaches main
// by way of a remote no more than by a push. It returns the broken rules, one line each.
func CheckFetched(dir, ours string, commits []string) (problems []string, err error) {
	env := []string{"GIT_DIR=" + dir}
	objs, err := newObjects(env)
	if err != nil {
		return nil, err
	}
	defer objs.close()
	c := &checker{env: env, objs: objs, importing: true, fetched: true, reported: map[string]bool{},
		trees: map[string]bool{}, blobs: map[string]string{}}
	obj, err := objs.read(ours+":"+gitstore.StoreFile, maxMeta)
	if err != nil {
		return nil, err
	}
	if !obj.missing && obj.data != nil {
		if info, err := gitstore.ParseStoreFile(obj.data); err == nil {
			c.oldInfo, c.storeID = &info, info.ID
		}
	}
	for _, h := range commits {
		if err := c.checkCommit(h); err != nil {
			return nil, err
		}
	}
	return c.lines(), nil
}
