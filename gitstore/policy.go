package gitstore

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gitmem/gitmem/secrets"
)

// Policy is a store's hygiene policy: what happens to secrets in writes, when memories
// nobody reads or writes expire, and how much the store may hold. It is kept in
// .gitmem/store.json beside the store's name, so that it travels with clones and sync.
// The zero value rejects secrets and sets no expiry and no quota.
type Policy struct {
	Secrets     SecretsPolicy `json:"secrets,omitempty"`      // "" is SecretsReject
	ExpireAfter Duration      `json:"expire_after,omitzero"`  // 0: memories never expire
	MaxMemories int           `json:"max_memories,omitempty"` // 0: no limit
	MaxBytes    int64         `json:"max_bytes,omitempty"`    // 0: no limit; content bytes of all memories
	// ReviewPaths are folders ("/team/") whose memories change only through review: a write
	// there by any actor but the ReviewExempt keys is refused (RuleReview), and goes
	// through a proposal (package proposals) that a person approves instead.
	ReviewPaths  []string `json:"review_paths,omitempty"`
	ReviewExempt []string `json:"review_exempt,omitempty"` // API key ids
}

// Limits of a review policy.
const (
	MaxReviewPaths  = 32
	MaxReviewExempt = 32
)

// Equal tells whether two policies are the same.
func (p Policy) Equal(q Policy) bool {
	return p.Secrets == q.Secrets && p.ExpireAfter == q.ExpireAfter && p.MaxMemories == q.MaxMemories &&
		p.MaxBytes == q.MaxBytes && slices.Equal(p.ReviewPaths, q.ReviewPaths) && slices.Equal(p.ReviewExempt, q.ReviewExempt)
}

// IsZero tells whether p is the default policy.
func (p Policy) IsZero() bool { return p.Equal(Policy{}) }

// review refuses a change of paths that the store's policy reviews, by an actor that may not
// make it directly. A fork (a proposal) makes such changes: that is how they are reviewed
// (and a trial write is checked as a fork would take it); reviewed says that a person
// approved the change; expiry is gitmem's own.
func (b *batch) review(p Policy, actor Actor, reviewed bool, paths ...string) error {
	if b.s.fork || b.trial || reviewed || actor.Type == SystemActor.Type && actor.ID == SystemActor.ID {
		return nil
	}
	for _, path := range paths {
		if path != "" && p.Reviews(path, actor) {
			return &Error{Kind: KindInvalid, Rule: RuleReview, Message: fmt.Sprintf("%s is in a folder that this store changes only through review: "+
				"propose the change instead (a key with access propose, or a session that attaches the store with :propose), for a person to approve", path)}
		}
	}
	return nil
}

// Reviews tells whether a change of path by actor needs review under the policy.
func (p Policy) Reviews(path string, actor Actor) bool {
	key := actorKey(actor)
	if key != "" && slices.Contains(p.ReviewExempt, key) {
		return false
	}
	for _, dir := range p.ReviewPaths {
		if strings.HasPrefix(path, dir) {
			return true
		}
	}
	return false
}

// actorKey is the API key that actor acts with: its own id, or its session's key; "" for
// none (the data directory's user, a server without keys).
func actorKey(actor Actor) string {
	if key := actor.KeyID(); key != "" {
		return key
	}
	return actor.APIKeyID
}

// ReviewedBy refuses what only a key that the review policy exempts may do, while the policy
// reviews any folder, when actor acts with another key: else a key under review could lift
// the review or exempt itself (what), or approve its own proposal of a reviewed folder,
// where its writes go, and so change the folder after all. An actor without a key may.
func (p Policy) ReviewedBy(actor Actor, what string) error {
	key := actorKey(actor)
	if len(p.ReviewPaths) == 0 || key == "" || slices.Contains(p.ReviewExempt, key) {
		return nil
	}
	return &Error{Kind: KindInvalid, Rule: RuleReview, Message: fmt.Sprintf("%s: only a key that this store's review policy exempts (review_exempt) may, and %s is not one", what, key)}
}

// ReviewChange refuses a change of the review policy, from p to next, by an actor that p
// does not exempt (ReviewedBy).
func (p Policy) ReviewChange(next Policy, actor Actor) error {
	if slices.Equal(p.ReviewPaths, next.ReviewPaths) && slices.Equal(p.ReviewExempt, next.ReviewExempt) {
		return nil
	}
	return p.ReviewedBy(actor, "changing the review policy (review_paths, review_exempt)")
}

// SecretsPolicy says what a write that holds a secret does.
type SecretsPolicy string

// The secrets policies.
const (
	// SecretsReject fails the write with an error that names the kind of each secret and
	// where it is, never the secret. It is the default.
	SecretsReject SecretsPolicy = "reject"
	// SecretsRedact replaces each secret with a marker ("[REDACTED github-pat]") before the
	// commit, and the write's result lists what was replaced.
	SecretsRedact SecretsPolicy = "redact"
	// SecretsOff stores content as it is.
	SecretsOff SecretsPolicy = "off"
)

// Effective is the policy in force: SecretsReject for "".
func (p SecretsPolicy) Effective() SecretsPolicy {
	if p == "" {
		return SecretsReject
	}
	return p
}

// MinExpireAfter is the shortest expiry a store may set, so that a typo ("1m" for "1mo")
// cannot empty a store between two reads.
const MinExpireAfter = time.Hour

// ValidatePolicy checks a policy: a known secrets policy, an expiry of at least an hour (or
// none), quotas that are not negative.
func ValidatePolicy(p Policy) error {
	switch p.Secrets {
	case "", SecretsReject, SecretsRedact, SecretsOff:
	default:
		return invalidf("secrets policy must be reject, redact or off, got %q", p.Secrets)
	}
	if p.ExpireAfter != 0 && time.Duration(p.ExpireAfter) < MinExpireAfter {
		return invalidf("expire_after must be at least %s (or 0 for never), got %s", Duration(MinExpireAfter), p.ExpireAfter)
	}
	if p.MaxMemories < 0 {
		return invalidf("max_memories must be 0 (no limit) or more, got %d", p.MaxMemories)
	}
	if p.MaxBytes < 0 {
		return invalidf("max_bytes must be 0 (no limit) or more, got %d", p.MaxBytes)
	}
	if len(p.ReviewPaths) > MaxReviewPaths || len(p.ReviewExempt) > MaxReviewExempt {
		return invalidf("a review policy has at most %d paths and %d exempt keys", MaxReviewPaths, MaxReviewExempt)
	}
	for _, dir := range p.ReviewPaths {
		if dir == "/" || !strings.HasSuffix(dir, "/") {
			return invalidf("review path %q must be a folder below the root, ending with / (such as /team/)", dir)
		}
		if err := ValidatePathPrefix(dir); err != nil {
			return err
		}
	}
	for _, k := range p.ReviewExempt {
		if !strings.HasPrefix(k, "apikey_") || len(k) > 64 {
			return invalidf("review exempt key %q must be an API key id (apikey_...)", k)
		}
	}
	return nil
}

// PolicyPatch changes a store's policy: nil fields are left alone; a zero expiry or quota
// removes it.
type PolicyPatch struct {
	Secrets      *SecretsPolicy
	ExpireAfter  *Duration
	MaxMemories  *int
	MaxBytes     *int64
	ReviewPaths  *[]string
	ReviewExempt *[]string
}

// ApplyPolicyPatch returns p changed by pp.
func ApplyPolicyPatch(p Policy, pp *PolicyPatch) Policy { return pp.apply(p) }

func (pp *PolicyPatch) apply(p Policy) Policy {
	if pp == nil {
		return p
	}
	if pp.Secrets != nil {
		p.Secrets = *pp.Secrets
	}
	if pp.ExpireAfter != nil {
		p.ExpireAfter = *pp.ExpireAfter
	}
	if pp.MaxMemories != nil {
		p.MaxMemories = *pp.MaxMemories
	}
	if pp.MaxBytes != nil {
		p.MaxBytes = *pp.MaxBytes
	}
	if pp.ReviewPaths != nil {
		p.ReviewPaths = slices.Clone(*pp.ReviewPaths)
	}
	if pp.ReviewExempt != nil {
		p.ReviewExempt = slices.Clone(*pp.ReviewExempt)
	}
	return p
}

// Duration is a time.Duration written as "720h", "30d" or "90m" in JSON and flags.
type Duration time.Duration

// ParseDuration reads a duration as time.ParseDuration does, and also whole days ("30d").
func ParseDuration(s string) (Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 {
			return 0, invalidf("duration %q: days must be a whole number, as in 30d", s)
		}
		return Duration(time.Duration(n) * 24 * time.Hour), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, invalidf("duration %q is not a duration such as 720h, 30d or 90m", s)
	}
	return Duration(d), nil
}

// String writes whole days as "30d" and whole hours as "36h".
func (d Duration) String() string {
	td := time.Duration(d)
	switch {
	case td == 0:
		return "0"
	case td%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", td/(24*time.Hour))
	case td%time.Hour == 0:
		return fmt.Sprintf("%dh", td/time.Hour)
	}
	s := td.String() // 1h30m0s, 5m0s: drop the zero seconds
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	return s
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// scanned is the outcome of scanning a write's content for secrets, made before the write
// is queued (so that callers scan in parallel, not in the writer).
type scanned struct {
	content  string
	findings []secrets.Finding
}

func scan(content string) (*scanned, error) {
	fs, err := secrets.Scan(content)
	if err != nil {
		return nil, fmt.Errorf("scan content for secrets: %w", err)
	}
	return &scanned{content: content, findings: fs}, nil
}

// secretsError is the error of a write refused because its content holds secrets. Its
// message names each secret's kind and position, never the secret.
func secretsError(fs []secrets.Finding) error {
	noun := "a secret"
	if len(fs) > 1 {
		noun = fmt.Sprintf("%d secrets", len(fs))
	}
	return &Error{Kind: KindInvalid, Rule: RuleSecret, Message: fmt.Sprintf("the content holds %s (%s); the store's secrets policy is reject, "+
		"so nothing was written: remove it, or keep it in a secret manager and write where to find it", noun, secrets.Describe(fs)),
	}
}

// admit applies the store's secrets policy to content about to be committed: it
// returns the content to commit and what was redacted, or an error if the policy rejects
// it. pre is the scan of content made before the write was queued, if any.
func (b *batch) admit(p Policy, content string, pre *scanned) (string, []secrets.Finding, error) {
	mode := p.Secrets.Effective()
	if mode == SecretsOff {
		return content, nil, nil
	}
	sc := pre
	if sc == nil || sc.content != content {
		var err error
		if sc, err = scan(content); err != nil {
			return "", nil, b.fail(err)
		}
	}
	if len(sc.findings) == 0 {
		return content, nil, nil
	}
	if !b.trial || mode == SecretsReject { // a tried redaction is counted by the write after it
		b.s.opts.Observer.SecretsRefused(b.s.id, mode != SecretsReject)
	}
	if mode == SecretsReject {
		return "", nil, secretsError(sc.findings)
	}
	out := secrets.Redact(content, sc.findings)
	if err := ValidateContent(out); err != nil {
		return "", nil, err
	}
	return out, sc.findings, nil
}

// prescan scans content before its write is queued, unless the store's secrets policy is
// off. The writer scans again only if the policy changed meanwhile.
func (s *Store) prescan(content string) (*scanned, error) {
	var p Policy
	s.readCatalog(func(ct catTx) error {
		info, err := ct.storeInfo()
		p = info.Policy
		return err
	})
	if p.Secrets.Effective() == SecretsOff {
		return nil, nil
	}
	return scan(content)
}

// prepare applies the store's policy to content about to be written: secrets, then
// quotas. old is the memory it replaces, nil for a new one. It returns the content to
// commit and the secrets redacted from it.
func (b *batch) prepare(p Policy, content string, pre *scanned, old *memRec) (string, []secrets.Finding, error) {
	out, red, err := b.admit(p, content, pre)
	if err != nil {
		return "", nil, err
	}
	memories, bytes := 1, int64(len(out))
	if old != nil {
		memories, bytes = 0, bytes-int64(old.Size)
	}
	if err := b.checkQuota(p, memories, bytes); err != nil {
		return "", nil, err
	}
	return out, red, nil
}

// redacted adds to a write's result what redaction changed: the findings and the content
// as stored.
func redacted(res WriteResult, err error, red []secrets.Finding, content string) (WriteResult, error) {
	if err != nil || len(red) == 0 {
		return res, err
	}
	res.Redacted = red
	res.Memory.Content = &content
	return res, nil
}
