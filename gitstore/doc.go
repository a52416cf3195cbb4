// Package gitstore is gitmem's storage: memory stores kept as bare git repositories, with
// the domain types (Memory, Version, Actor, StoreInfo) and the errors every other package
// uses.
//
// Glossary:
//
//   - data directory: stores/<id>.git (one bare repository per store), catalog/<id>.db (one
//     catalog per store) and gitmem.lock (held by the one process that has it open).
//   - memory: a file on refs/heads/main; the memory path /a/b.md is the tree path a/b.md.
//     .gitmem/store.json holds the store's metadata and is never a memory.
//   - version: one mutation of one memory (created, modified, deleted); a commit made by
//     gitmem is exactly one version, named by its Gitmem-* trailers. A commit made with plain
//     git is one version per changed file, with ids derived from the commit and the path.
//   - catalog: memory id -> path and state, and the list of versions; derived from the
//     history of main, rebuilt from it at any time, never part of the repository.
//   - writer: the one goroutine per store that commits. It takes queued mutations in groups;
//     each mutation gets its own commit, and the group shares one durable ref update (group
//     commit).
//   - object database: the repository's packs, loose objects and main ref, and how they reach
//     disk durably (a pack per group, main moved through main.lock): package internal/odb,
//     which the writer, gc and redaction call and which knows nothing of the catalog.
//   - snapshot: a read runs in one catalog transaction, which reflects one commit of main.
package gitstore
