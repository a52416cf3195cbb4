// Walks gitmem's memory store API with the official TypeScript SDK. The Go test
// TestTypeScriptSDK starts a server and runs this with GITMEM_URL and GITMEM_KEY set; any
// mismatch throws, and node exits non-zero.
import Anthropic from '@anthropic-ai/sdk';
import assert from 'node:assert/strict';

const client = new Anthropic({ baseURL: process.env.GITMEM_URL, apiKey: process.env.GITMEM_KEY });
const ms = client.beta.memoryStores;

const store = await ms.create({ name: 'ts', description: 'from TypeScript', metadata: { lang: 'ts' } });
assert.match(store.id, /^memstore_/);
assert.equal(store.archived_at, null);
assert.deepEqual(store.metadata, { lang: 'ts' });

const updated = await ms.update(store.id, { metadata: { lang: null, sdk: 'node' } });
assert.deepEqual(updated.metadata, { sdk: 'node' });

const mem = await ms.memories.create(store.id, { path: '/notes/a.md', content: 'alpha' });
assert.equal(mem.content, null);
assert.equal(mem.content_size_bytes, 5);
const full = await ms.memories.retrieve(mem.id, { memory_store_id: store.id });
assert.equal(full.content, 'alpha');

for (let i = 0; i < 12; i++) {
  await ms.memories.create(store.id, { path: `/notes/deep/n${String(i).padStart(2, '0')}.md`, content: `n${i}` });
}
const top = await ms.memories.list(store.id, { depth: 1 });
assert.deepEqual(top.data.map((x) => `${x.type} ${x.path}`), ['memory_prefix /notes/']);
const paths = [];
for await (const item of ms.memories.list(store.id, { path_prefix: '/notes/', limit: 5 })) {
  paths.push(item.path);
}
assert.equal(paths.length, 13);
assert.equal(paths[0], '/notes/a.md');

const renamed = await ms.memories.update(mem.id, { memory_store_id: store.id, path: '/notes/b.md', content: 'beta' });
assert.equal(renamed.id, mem.id);
assert.equal(renamed.path, '/notes/b.md');

// A stale precondition is a 409 ConflictError, with the error type in the body.
await assert.rejects(
  ms.memories.update(mem.id, {
    memory_store_id: store.id,
    content: 'gamma',
    precondition: { type: 'content_sha256', content_sha256: mem.content_sha256 },
  }),
  (err) => {
    assert.equal(err.status, 409);
    assert.equal(err.error.error.type, 'memory_precondition_failed_error');
    assert.ok(err.requestID.startsWith('req_'));
    return true;
  },
);
await assert.rejects(ms.memories.create(store.id, { path: 'relative.md', content: '' }), (err) => err.status === 400);

const deleted = await ms.memories.delete(mem.id, { memory_store_id: store.id });
assert.deepEqual(deleted, { type: 'memory_deleted', id: mem.id });
await assert.rejects(ms.memories.retrieve(mem.id, { memory_store_id: store.id }), (err) => err.status === 404);

const versions = [];
for await (const v of ms.memoryVersions.list(store.id, { memory_id: mem.id })) {
  versions.push(v.operation);
}
assert.deepEqual(versions, ['deleted', 'modified', 'created']);
const first = await ms.memoryVersions.list(store.id, { memory_id: mem.id, operation: 'created' });
const v = await ms.memoryVersions.retrieve(first.data[0].id, { memory_store_id: store.id });
assert.equal(v.content, 'alpha');
assert.equal(v.redacted_at, null);
const redacted = await ms.memoryVersions.redact(v.id, { memory_store_id: store.id });
assert.equal(redacted.id, v.id);
assert.equal(redacted.content, null);
assert.equal(redacted.path, null);
assert.equal(redacted.content_sha256, null);
assert.notEqual(redacted.redacted_at, null);
assert.equal(redacted.redacted_by.type, 'api_actor');
assert.equal(redacted.created_at, v.created_at);

const archived = await ms.archive(store.id);
assert.notEqual(archived.archived_at, null);
const listed = [];
for await (const s of ms.list({ include_archived: true })) listed.push(s.id);
assert.ok(listed.includes(store.id));
assert.deepEqual(await ms.delete(store.id), { type: 'memory_store_deleted', id: store.id });
console.log('typescript sdk: all checks passed');
