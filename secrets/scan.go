// Package secrets finds credentials in text before it is stored: API keys of the common
// providers, private keys, tokens, passwords in URLs and long random-looking strings. It
// runs gitleaks' detector (its default rules) with two rules of gitmem's own, and says where
// each secret is without ever returning the secret itself.
package secrets

import (
	_ "embed"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/spf13/viper"
	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"
)

//go:embed rules.toml
var extraRules string

// Finding is one secret in a text: what kind it is (the rule that found it, such as
// "github-pat" or "private-key") and where it starts. It never holds the secret.
type Finding struct {
	Kind   string
	Line   int // 1-based
	Column int // 1-based, in characters

	start, end int // byte offsets of the secret
}

func (f Finding) String() string {
	return fmt.Sprintf("%s at line %d, column %d", f.Kind, f.Line, f.Column)
}

// Describe lists findings for a message: "github-pat at line 1, column 8; private-key at ...".
func Describe(fs []Finding) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.String()
	}
	return strings.Join(parts, "; ")
}

// detector is built once: compiling gitleaks' ~220 rules takes ~100 ms. Detect is safe for
// concurrent use (it reads the rules and keeps no findings of its own).
var detector = sync.OnceValues(func() (*detect.Detector, error) {
	v := viper.New() // not viper's global instance, which gitleaks' own helpers use
	v.SetConfigType("toml")
	if err := v.ReadConfig(strings.NewReader(config.DefaultConfig + "\n" + extraRules)); err != nil {
		return nil, fmt.Errorf("read secret rules: %w", err)
	}
	var vc config.ViperConfig
	if err := v.Unmarshal(&vc); err != nil {
		return nil, fmt.Errorf("read secret rules: %w", err)
	}
	cfg, err := vc.Translate()
	if err != nil {
		return nil, fmt.Errorf("compile secret rules: %w", err)
	}
	return detect.NewDetector(cfg), nil
})

// Scan returns the secrets in content, in order of position. The error is only ever a
// failure to build the rules, never about content.
func Scan(content string) ([]Finding, error) {
	d, err := detector()
	if err != nil {
		return nil, err
	}
	var out []Finding
	seen := map[string]bool{}
	for _, f := range d.DetectString(content) {
		if f.Secret == "" || gitmemID.MatchString(f.Secret) || f.RuleID == entropyRule && !mixed(withoutPrefix(f.Secret)) {
			continue
		}
		// gitleaks counts lines from 0; find the secret from the start of its line.
		from := lineStart(content, f.StartLine)
		i := strings.Index(content[from:], f.Secret)
		if i < 0 {
			i, from = strings.Index(content, f.Secret), 0
		}
		key := fmt.Sprint(from+i, f.RuleID)
		if i < 0 || seen[key] {
			continue
		}
		start := from + i
		seen[key] = true
		line, col := position(content, start)
		out = append(out, Finding{Kind: f.RuleID, Line: line, Column: col, start: start, end: start + len(f.Secret)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
	return preferNamed(out), nil
}

// gitmemID matches gitmem's own ids (memstore_, mem_, memver_, apikey_, sesn_, user_,
// svac_ and a ULID), which memories name often and which grant nothing: an API key's id is
// not its secret.
var gitmemID = regexp.MustCompile(`^(?:memstore|memver|mem|apikey|sesn|user|svac)_[0-9A-HJKMNP-TV-Z]{26}$`)

// entropyRule finds secrets by randomness alone; a rule that knows the kind says more.
const entropyRule = "high-entropy-string"

// preferNamed drops the findings of entropyRule that overlap a finding of another rule.
func preferNamed(fs []Finding) []Finding {
	out := fs[:0:0]
	for _, f := range fs {
		covered := false
		for _, g := range fs {
			covered = covered || f.Kind == entropyRule && g.Kind != entropyRule && f.start < g.end && g.start < f.end
		}
		if !covered {
			out = append(out, f)
		}
	}
	return out
}

// withoutPrefix drops a lowercase prefix such as "memstore_" or "ghp_" from a token, so
// that an id like memstore_01JD... (a fixed word and an upper-case ULID) is not taken for
// a random key.
func withoutPrefix(s string) string {
	i := strings.IndexAny(s, "_-")
	if i > 0 && strings.ToLower(s[:i]) == s[:i] {
		return s[i+1:]
	}
	return s
}

// mixed reports whether a token has lower and upper case letters and digits, as generated
// keys do and identifiers, words and hex hashes mostly do not.
func mixed(s string) bool {
	var lower, upper, digit bool
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z':
			lower = true
		case r >= 'A' && r <= 'Z':
			upper = true
		case r >= '0' && r <= '9':
			digit = true
		}
	}
	return lower && upper && digit
}

func lineStart(s string, line int) int {
	at := 0
	for ; line > 0; line-- {
		i := strings.IndexByte(s[at:], '\n')
		if i < 0 {
			return 0
		}
		at += i + 1
	}
	return at
}

func position(s string, at int) (line, col int) {
	before := s[:at]
	line = strings.Count(before, "\n") + 1
	return line, utf8.RuneCountInString(before[strings.LastIndexByte(before, '\n')+1:]) + 1
}

// Marker is what Redact puts where a secret was.
func Marker(kind string) string { return "[REDACTED " + kind + "]" }

// Redact returns content with each finding replaced by its Marker. Findings must come from
// Scan of the same content.
func Redact(content string, fs []Finding) string {
	var b strings.Builder
	at := 0
	for _, f := range fs {
		if f.start < at { // overlaps the one before: already covered
			if f.end > at {
				at = f.end
			}
			continue
		}
		b.WriteString(content[at:f.start])
		b.WriteString(Marker(f.Kind))
		at = f.end
	}
	b.WriteString(content[at:])
	return b.String()
}
