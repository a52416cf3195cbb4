// Runs memory-tool command sequences through the official TypeScript SDK's reference implementation
// (@anthropic-ai/sdk's BetaLocalFilesystemMemoryTool), so that a Go differential test can compare gitmem's
// output with it.
//
// Usage: node tooladapter/testdata/reference/run.mjs < input.json > output.json
// (install first: npm ci --prefix tooladapter/testdata/reference)
//
// Input (one JSON document on stdin):
//   {"cases": [{"files": {"a.txt": "content", "dir/b.md": "..."},   // written under <tmp>/memories/, parents created
//               "dirs": ["emptydir"],                              // created under <tmp>/memories/ (recursively)
//               "commands": [{"command": "view", "path": "/memories"}, ...]}, ...]}
//   Optional fields of a case: "prune_empty_dirs": true removes every empty directory below memories/ after each
//   command (the root stays), so that the reference behaves like a git tree, which has no empty directories;
//   "snapshots": true adds to each output the "files" after that command.
//   Other fields of a case (such as "name" or "want") are ignored.
//
// Output (one JSON document on stdout):
//   {"results": [{"outputs": [{"content": "...", "is_error": false}, ...],
//                 "files": {"a.txt": "content", ...},   // every regular file under <tmp>/memories, hidden ones too
//                 "dirs": ["dir", "emptydir", ...],     // every directory under <tmp>/memories, root excluded
//                 "root_exists": true}, ...]}           // false when <tmp>/memories itself is gone
//
// Each command goes through runRunnableTool, the function the SDK's tool runners call for a runnable tool: it parses
// the input, calls the tool's run, and turns a thrown error into content "Error: " + message with is_error true. The
// absolute temp path inside any message is replaced by "<base>". Paths in "files" and "dirs" use '/' and are sorted
// by their UTF-8 bytes (Go's string order); file contents are read as UTF-8 (invalid bytes become U+FFFD).
//
// The temp directories are made under os.tmpdir() (TMPDIR). Directory sizes in `view` listings are the filesystem's
// st_size: "4K" on ext4, but e.g. "40B"/"80B" on tmpfs, so the wants in vectors.json (made on ext4) expect an
// ext4-like TMPDIR. Each case's temp directory is removed once the case has run.
//
// vectors.json holds the conformance vectors of the memory-tool research note in this input format, each with a
// "name" and a "want" (this script's result for it); `node run.mjs < vectors.json` reproduces the wants in order.
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { BetaLocalFilesystemMemoryTool, betaMemoryTool } from '@anthropic-ai/sdk/tools/memory/node';
import { runRunnableTool } from '@anthropic-ai/sdk/lib/tools/BetaRunnableTool';

const PLACEHOLDER = '<base>';

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf-8');
}

function byteOrder(a, b) {
  return Buffer.compare(Buffer.from(a, 'utf-8'), Buffer.from(b, 'utf-8'));
}

// Replaces every absolute spelling of the case's temp directory with the placeholder.
function scrub(value, bases) {
  if (typeof value === 'string') {
    let out = value;
    for (const base of bases) out = out.split(base).join(PLACEHOLDER);
    return out;
  }
  if (Array.isArray(value)) return value.map((v) => scrub(v, bases));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, scrub(v, bases)]));
  }
  return value;
}

// Every regular file (rel path -> UTF-8 content) and every directory below root; symlinks and other types are left
// out.
async function snapshot(root) {
  const files = {};
  const dirs = [];
  try {
    const st = await fs.lstat(root);
    if (!st.isDirectory()) return { files, dirs, root_exists: false };
  } catch (err) {
    if (err.code === 'ENOENT') return { files, dirs, root_exists: false };
    throw err;
  }
  const walk = async (dir, rel) => {
    for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      const relPath = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        dirs.push(relPath);
        await walk(full, relPath);
      } else if (entry.isFile()) {
        files[relPath] = await fs.readFile(full, 'utf-8');
      }
    }
  };
  await walk(root, '');
  dirs.sort(byteOrder);
  const sortedFiles = {};
  for (const key of Object.keys(files).sort(byteOrder)) sortedFiles[key] = files[key];
  return { files: sortedFiles, dirs, root_exists: true };
}

// Removes the empty directories below dir, and dir itself if it ends up empty and is not the root. Returns whether
// dir is gone.
async function pruneEmptyDirs(dir, isRoot) {
  let entries;
  try {
    entries = await fs.readdir(dir, { withFileTypes: true });
  } catch (err) {
    if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return false;
    throw err;
  }
  let left = entries.length;
  for (const entry of entries) {
    if (entry.isDirectory() && (await pruneEmptyDirs(path.join(dir, entry.name), false))) left--;
  }
  if (left === 0 && !isRoot) {
    await fs.rmdir(dir);
    return true;
  }
  return false;
}

async function runCase(c, index) {
  const made = await fs.mkdtemp(path.join(os.tmpdir(), 'gitmem-memref-'));
  const tmp = await fs.realpath(made);
  const bases = [...new Set([tmp, made])].sort((a, b) => b.length - a.length);
  try {
    const memory = await BetaLocalFilesystemMemoryTool.init(tmp);
    const root = path.join(tmp, 'memories');
    for (const rel of c.dirs ?? []) {
      await fs.mkdir(path.join(root, rel), { recursive: true });
    }
    for (const [rel, content] of Object.entries(c.files ?? {})) {
      const full = path.join(root, rel);
      await fs.mkdir(path.dirname(full), { recursive: true });
      await fs.writeFile(full, content, 'utf-8');
    }

    const tool = betaMemoryTool(memory);
    const outputs = [];
    for (const [i, input] of (c.commands ?? []).entries()) {
      const toolUse = { type: 'tool_use', id: `toolu_${index}_${i}`, name: tool.name, input };
      const outcome = await runRunnableTool(tool, input, { toolUse, toolUseBlock: toolUse });
      if (c.prune_empty_dirs) await pruneEmptyDirs(root, true);
      const output = { content: scrub(outcome.content, bases), is_error: outcome.isError };
      if (c.snapshots) output.files = scrub((await snapshot(root)).files, bases);
      outputs.push(output);
    }
    return { outputs, ...scrub(await snapshot(root), bases) };
  } finally {
    await fs.rm(made, { recursive: true, force: true });
  }
}

const input = JSON.parse(await readStdin());
if (!input || !Array.isArray(input.cases)) {
  throw new Error('input must be a JSON object with a "cases" array');
}
const results = [];
for (const [i, c] of input.cases.entries()) {
  results.push(await runCase(c, i));
}
process.stdout.write(JSON.stringify({ results }) + '\n');
