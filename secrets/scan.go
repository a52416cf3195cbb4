// Package secrets finds credentials in text before it is stored: API keys of the common
// providers, private keys, tokens, passwords in URLs and long random-looking strings. It
// runs gitleaks' detector (its default rules) with two rules of gitmem's own, and says where
// each secret is without ever returning the secret itself.
package secrets

import (
	_ "embed"
	"fmt"
	"maps"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/spf13/viper"
	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/report"
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

// detectors are built once: compiling gitleaks' ~220 rules takes ~100 ms. Detect is safe for
// concurrent use (it reads the rules and keeps no findings of its own).
var detectors = sync.OnceValues(func() (detectorSet, error) {
	cfg, err := rules()
	if err != nil {
		return detectorSet{}, err
	}
	var ds detectorSet
	named := maps.Clone(cfg.Rules)
	for _, g := range gates {
		r, ok := cfg.Rules[g.rule]
		if !ok || r.Regex == nil || r.Regex.String() != g.regex {
			continue // not the expression the gate was read from: the rule runs on every text
		}
		delete(named, g.rule)
		ds.gated = append(ds.gated, gatedDetector{gate: g, d: detectorOf(cfg, map[string]config.Rule{g.rule: r})})
	}
	// The rules of gitleaks' common form for a service's key (semigeneric.go), as one.
	if semi, open := semiGeneric(named); len(semi) > 0 {
		for id := range semi {
			delete(named, id)
		}
		ds.gated = append(ds.gated, gatedDetector{gate: gate{rule: semiGenericRules, open: open}, d: detectorOf(cfg, semi)})
	}
	ds.named = detectorOf(cfg, named)
	return ds, nil
})

// detectorOf is a detector of cfg's with the rules rs alone, and their keywords.
func detectorOf(cfg config.Config, rs map[string]config.Rule) *detect.Detector {
	cfg.Rules = rs
	cfg.Keywords = map[string]struct{}{}
	for _, r := range rs {
		for _, k := range r.Keywords {
			cfg.Keywords[strings.ToLower(k)] = struct{}{}
		}
	}
	return detect.NewDetector(cfg)
}

// rules reads gitleaks' default rules and gitmem's own.
func rules() (config.Config, error) {
	v := viper.New() // not viper's global instance, which gitleaks' own helpers use
	v.SetConfigType("toml")
	if err := v.ReadConfig(strings.NewReader(config.DefaultConfig + "\n" + extraRules)); err != nil {
		return config.Config{}, fmt.Errorf("read secret rules: %w", err)
	}
	var vc config.ViperConfig
	if err := v.Unmarshal(&vc); err != nil {
		return config.Config{}, fmt.Errorf("read secret rules: %w", err)
	}
	cfg, err := vc.Translate()
	if err != nil {
		return config.Config{}, fmt.Errorf("compile secret rules: %w", err)
	}
	if _, ok := cfg.Rules[entropyRule]; !ok {
		return config.Config{}, fmt.Errorf("compile secret rules: no rule %s", entropyRule)
	}
	return cfg, nil
}

// detectorSet is the gated rules, each in a detector of its own, and every other rule.
type detectorSet struct {
	named *detect.Detector
	gated []gatedDetector
}

type gatedDetector struct {
	gate
	d *detect.Detector
}

// tokenRun is the shortest token that entropyRule finds (rules.toml).
const tokenRun = 32

// Scan returns the secrets in content, in order of position. The error is only ever a
// failure to build the rules, never about content.
func Scan(content string) ([]Finding, error) {
	ds, err := detectors()
	if err != nil {
		return nil, err
	}
	found := ds.named.DetectString(content)
	gated := false
	for _, g := range ds.gated {
		if g.open(content) {
			found = append(found, g.d.DetectString(content)...)
			gated = true
		}
	}
	if gated {
		found = withoutCoveredGeneric(found)
	}
	return findings(content, found), nil
}

// withoutCoveredGeneric drops the findings of gitleaks' generic rules whose secret another
// rule's finding on the same line holds, as gitleaks does among the findings of one detector
// (its filter, in detect/utils.go): Scan's come from several.
func withoutCoveredGeneric(fs []report.Finding) []report.Finding {
	generic := func(f report.Finding) bool { return strings.Contains(strings.ToLower(f.RuleID), "generic") }
	out := fs[:0:0]
	for _, f := range fs {
		covered := false
		for _, g := range fs {
			covered = covered || generic(f) && !generic(g) && g.RuleID != f.RuleID &&
				g.StartLine == f.StartLine && strings.Contains(g.Secret, f.Secret)
		}
		if !covered {
			out = append(out, f)
		}
	}
	return out
}

// findings turns gitleaks' findings in content into Scan's.
func findings(content string, found []report.Finding) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, f := range found {
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
	// By position, then kind: two rules can find a secret at one place, in any order.
	sort.Slice(out, func(i, j int) bool {
		if out[i].start != out[j].start {
			return out[i].start < out[j].start
		}
		return out[i].Kind < out[j].Kind
	})
	return preferNamed(out)
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
