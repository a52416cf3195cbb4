package gitstore

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Layout says where each thing is in a data directory. Every path into a data directory is
// made here, and every name found in one is read back here:
//
//	gitmem.lock            the exclusive lock of the process that holds the directory
//	keys.json              the API keys, hashed, and keys.json.lock (package apikeys)
//	stores/<id>.git        a store's bare repository
//	stores/.<name>         a repository being created, imported or deleted (removed at open)
//	catalog/<id>.db        a store's catalog (bbolt)
//	search/<id>.bleve      a store's search index (package search)
//	git-hooks/             the pre-receive hook of git over HTTP (package gitserve)
//	remotes/<id>.json      a store's remotes, and <id>.state.json their sync state (package gitsync)
//	ui-session.key         the key that signs the web UI's sign-in cookies (package webui)
//	webhooks.json          the webhooks, with their signing secrets (package webhooks)
//	webhooks/<id>.json     a webhook's delivery cursors and log (package webhooks)
//	.ready-probe           written and removed by each readiness check (health.go)
//	proposals/<store>.json a store's proposals in one list, as gitmem kept them before records (read, then moved into them)
//	proposals/<store>/<prop_id>.json a proposal's record: its state and thread (package proposals)
//	proposals/<store>/<prop_id>/ a proposal's fork: repo.git and catalog.db (fork.go)
//	proposals/<store>/.redacting the versions whose redaction the forks may lack (forkmarks.go)
type Layout struct{ Root string }

// LockFile is the file whose lock the process that holds the directory has.
func (l Layout) LockFile() string { return filepath.Join(l.Root, "gitmem.lock") }

// KeysFile holds the API keys; KeysFile()+".lock" serializes their changes.
func (l Layout) KeysFile() string { return filepath.Join(l.Root, "keys.json") }

// StoresDir holds the stores' bare repositories.
func (l Layout) StoresDir() string { return filepath.Join(l.Root, "stores") }

// StoreRepo is the bare repository of the store id.
func (l Layout) StoreRepo(id string) string { return filepath.Join(l.StoresDir(), id+".git") }

// StoresTemp is a repository in the making or being removed, named name (which starts with
// "."): what a crash leaves so named is removed when the directory is opened.
func (l Layout) StoresTemp(name string) string { return filepath.Join(l.StoresDir(), name) }

// StoreIDs lists the stores that have a repository in StoresDir, newest first (ids are
// time-ordered), archived ones included.
func (l Layout) StoreIDs() ([]string, error) {
	entries, err := os.ReadDir(l.StoresDir())
	if err != nil {
		return nil, fmt.Errorf("list stores: %w", err)
	}
	var ids []string
	for _, e := range entries {
		if id, ok := l.RepoStore(e.Name()); ok {
			ids = append(ids, id)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(ids)))
	return ids, nil
}

// RepoStore returns the id of the store whose repository is named name in StoresDir, and
// false for any other name (a temporary repository, say).
func (Layout) RepoStore(name string) (string, bool) {
	id, ok := strings.CutSuffix(name, ".git")
	return id, ok && validID(StorePrefix, id)
}

// ProposalsDir holds the stores' proposals and their forks.
func (l Layout) ProposalsDir() string { return filepath.Join(l.Root, "proposals") }

// ProposalsFile listed the proposals of the store id in one file, which each change rewrote
// whole; a data directory made before records (ProposalRecord) may still hold it.
func (l Layout) ProposalsFile(id string) string { return filepath.Join(l.ProposalsDir(), id+".json") }

// ProposalForks holds the proposals of store id: their records and their forks.
func (l Layout) ProposalForks(id string) string { return filepath.Join(l.ProposalsDir(), id) }

// ProposalRecord is the record of proposal prop of store id (package proposals).
func (l Layout) ProposalRecord(id, prop string) string {
	return filepath.Join(l.ProposalForks(id), prop+".json")
}

// RecordProposal returns the proposal whose record is named name in ProposalForks, and false
// for any other name (a fork, a temporary file).
func (Layout) RecordProposal(name string) (string, bool) {
	prop, ok := strings.CutSuffix(name, ".json")
	return prop, ok && prop != "" && !strings.HasPrefix(prop, ".")
}

// ProposalFork is the fork that holds the changes of proposal prop of store id.
func (l Layout) ProposalFork(id, prop string) string { return filepath.Join(l.ProposalForks(id), prop) }

// ForksRedacting lists the versions of store id that the store redacted, or began to, and
// that its forks may not have redacted yet (forkmarks.go).
func (l Layout) ForksRedacting(id string) string {
	return filepath.Join(l.ProposalForks(id), ".redacting")
}

// CatalogDir holds the stores' catalogs.
func (l Layout) CatalogDir() string { return filepath.Join(l.Root, "catalog") }

// CatalogFile is the catalog of the store id.
func (l Layout) CatalogFile(id string) string { return filepath.Join(l.CatalogDir(), id+".db") }

// SearchDir holds the search indexes.
func (l Layout) SearchDir() string { return filepath.Join(l.Root, "search") }

// SearchIndex is the search index of the store id.
func (l Layout) SearchIndex(id string) string { return filepath.Join(l.SearchDir(), id+".bleve") }

// SearchIndexStore returns the id of the store whose index is named name in SearchDir, and
// false if name is not an index's.
func (Layout) SearchIndexStore(name string) (string, bool) {
	return strings.CutSuffix(name, ".bleve")
}

// HooksDir holds the git hooks that git over HTTP runs.
func (l Layout) HooksDir() string { return filepath.Join(l.Root, "git-hooks") }

// RemotesDir holds the stores' remotes and sync states.
func (l Layout) RemotesDir() string { return filepath.Join(l.Root, "remotes") }

// RemotesFile lists the remotes of the store id.
func (l Layout) RemotesFile(id string) string { return filepath.Join(l.RemotesDir(), id+".json") }

// RemotesFileStore returns the id of the store whose remotes are listed in the file named
// name in RemotesDir, and false for any other name (a sync state, a temporary file).
func (Layout) RemotesFileStore(name string) (string, bool) {
	id, ok := strings.CutSuffix(name, ".json")
	if !ok || strings.HasSuffix(id, ".state") || strings.HasPrefix(id, ".") {
		return "", false
	}
	return id, true
}

// SyncStateFile holds the sync state of the remotes of the store id.
func (l Layout) SyncStateFile(id string) string {
	return filepath.Join(l.RemotesDir(), id+".state.json")
}

// UISessionKeyFile holds the secret that signs the web UI's session and CSRF tokens: kept
// in the directory so that sign-ins outlive a restart of the server.
func (l Layout) UISessionKeyFile() string { return filepath.Join(l.Root, "ui-session.key") }

// WebhooksFile lists the webhooks and their signing secrets.
func (l Layout) WebhooksFile() string { return filepath.Join(l.Root, "webhooks.json") }

// WebhooksDir holds the webhooks' delivery state.
func (l Layout) WebhooksDir() string { return filepath.Join(l.Root, "webhooks") }

// WebhookStateFile holds how far webhook id has delivered each store's events, and its
// delivery log.
func (l Layout) WebhookStateFile(id string) string {
	return filepath.Join(l.WebhooksDir(), id+".json")
}

// ReadyProbeFile is the file that readiness writes and removes to see that the disk takes
// writes (health.go).
func (l Layout) ReadyProbeFile() string { return filepath.Join(l.Root, ".ready-probe") }
