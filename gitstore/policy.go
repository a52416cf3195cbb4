package gitstore

import (
	"fmt"
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
	return nil
}

// PolicyPatch changes a store's policy: nil fields are left alone; a zero expiry or quota
// removes it.
type PolicyPatch struct {
	Secrets     *SecretsPolicy
	ExpireAfter *Duration
	MaxMemories *int
	MaxBytes    *int64
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
	b.s.opts.Observer.SecretsRefused(b.s.id, mode != SecretsReject)
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
