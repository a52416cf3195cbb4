package gitserve

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/secrets"
)

// The store's hygiene policy (gitstore.Policy) as push rules: no secrets in pushed files
// and no quota exceeded. The policy is the one on main before the push, so a push cannot
// turn the check off for its own content.

func (c *checker) policy() gitstore.Policy {
	if c.oldInfo == nil {
		return gitstore.Policy{}
	}
	return c.oldInfo.Policy
}

// secretRule is the rule a pushed file's content breaks by holding secrets, or "". A push
// cannot be redacted (its commits are the pusher's, with their hashes), so the policy
// redact refuses it too; only off lets secrets in. An import brings a history made
// elsewhere under its own policy and is not scanned; what a sync fetches is.
func (c *checker) secretRule(data []byte) (string, error) {
	if c.importing && !c.fetched || c.policy().Secrets.Effective() == gitstore.SecretsOff {
		return "", nil
	}
	fs, err := secrets.Scan(string(data))
	if err != nil || len(fs) == 0 {
		return "", err
	}
	noun := "a secret"
	if len(fs) > 1 {
		noun = fmt.Sprintf("%d secrets", len(fs))
	}
	return fmt.Sprintf("holds %s (%s), and the store's secrets policy is %s: take it out of the commits",
		noun, secrets.Describe(fs), c.policy().Secrets.Effective()), nil
}

// checkQuotas refuses a push that takes ref past a quota of the store's policy (and adds to
// what is over it: a push that frees space passes). On a proposal branch (old is main) it is
// the store the branch would make once approved, as a write through the API to a proposal is
// checked: so a propose key cannot park more than the quota on a branch, to wait for review.
func (c *checker) checkQuotas(ref, old, new string) error {
	p := c.policy()
	if p.MaxMemories == 0 && p.MaxBytes == 0 {
		return nil
	}
	var before, after gitstore.Usage
	var err error
	what := "the push would make the store hold"
	if ref == mainRef {
		if before, err = c.usage(old); err == nil {
			after, err = c.usage(new)
		}
	} else {
		what = "the branch would make the store hold, once approved,"
		before, after, err = c.approved(old, new)
	}
	if err != nil {
		return err
	}
	if p.MaxMemories > 0 && after.Memories > p.MaxMemories && after.Memories > before.Memories {
		c.fail(ref, fmt.Sprintf("%s %d memories, past its quota max_memories of %d", what, after.Memories, p.MaxMemories))
	}
	if p.MaxBytes > 0 && after.Bytes > p.MaxBytes && after.Bytes > before.Bytes {
		c.fail(ref, fmt.Sprintf("%s %d bytes, past its quota max_bytes of %d", what, after.Bytes, p.MaxBytes))
	}
	return nil
}

// usage counts the memories of a commit and their bytes.
func (c *checker) usage(commit string) (gitstore.Usage, error) {
	fs, err := c.memories(commit)
	return count(fs), err
}

// approved counts the memories and bytes of main (before) and of main once branch is
// approved into it (after), as approval counts them: main, with the changes of branch since
// it left main (their merge base) applied.
func (c *checker) approved(main, branch string) (before, after gitstore.Usage, err error) {
	base, err := c.run("merge-base", main, branch)
	if err != nil {
		return before, after, err // checkProposal refused a branch without one
	}
	var trees [3]map[string]memoryFile
	for i, commit := range []string{main, base, branch} {
		if trees[i], err = c.memories(commit); err != nil {
			return before, after, err
		}
	}
	files, was, now := trees[0], trees[1], trees[2]
	before = count(files)
	for path, f := range now {
		if was[path] != f {
			files[path] = f
		}
	}
	for path := range was {
		if _, ok := now[path]; !ok {
			delete(files, path)
		}
	}
	return before, count(files), nil
}

// memoryFile is a memory of a commit: its blob and size.
type memoryFile struct {
	blob string
	size int64
}

// memories lists the memories of a commit by path.
func (c *checker) memories(commit string) (map[string]memoryFile, error) {
	fs := map[string]memoryFile{}
	if commit == zeroHash {
		return fs, nil
	}
	out, err := c.run("ls-tree", "-r", "-l", "-z", commit)
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(out, "\x00") {
		meta, path, ok := strings.Cut(line, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 4 || f[1] != "blob" || strings.HasPrefix(path, ".gitmem/") {
			continue
		}
		n, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("ls-tree size %q: %w", f[3], err)
		}
		fs[path] = memoryFile{blob: f[2], size: n}
	}
	return fs, nil
}

func count(fs map[string]memoryFile) gitstore.Usage {
	var u gitstore.Usage
	for _, f := range fs {
		u.Memories++
		u.Bytes += f.size
	}
	return u
}
