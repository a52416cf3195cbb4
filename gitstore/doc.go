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
//   - commit format: what a commit of main means: every Gitmem-* trailer, how it is written
//     and read (commitformat.go), and the one derivation of ids for commits made with plain
//     git (plain.go).
//   - catalog: a bbolt file per store, never part of the repository; its schema is in
//     catalog_schema.go, and only the catalog's files (catalog*.go) open its buckets. The
//     derived buckets (meta, mem, path, ver, verid, memver, sesver, keyver: memory id -> path
//     and state, the list of versions, and the versions of each memory, session and API key)
//     come from the history of main and are rebuilt from it at any time. The kept buckets hold what history does not: which API key pushed a commit
//     (pushkey), when a memory was last read (read), which commits a redaction rewrote
//     (rewritten) and which objects it left to prune (prune); a rebuild keeps them, and
//     nothing can rebuild them if the catalog file is lost.
//   - writer: the one goroutine per store that commits. It takes queued mutations in groups;
//     each mutation gets its own commit, and the group shares one durable ref update (group
//     commit).
//   - object database: the repository's packs, loose objects and main ref, and how they reach
//     disk durably (a pack per group, main moved through main.lock): package internal/odb,
//     which the writer, gc and redaction call and which knows nothing of the catalog.
//   - snapshot: a read runs in one catalog transaction, which reflects one commit of main.
package gitstore
