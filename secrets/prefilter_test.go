package secrets

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/zricethezav/gitleaks/v8/detect"

	"github.com/gitmem/gitmem/secrets/secrettest"
)

// TestScanAsOneDetector: Scan, which runs entropyRule only on texts with a long token and in
// a detector of its own, finds what one detector of every rule finds, on texts with and
// without secrets, tokens at and around tokenRun characters, and a generic key that
// entropyRule also finds.
func TestScanAsOneDetector(t *testing.T) {
	cfg, err := rules()
	if err != nil {
		t.Fatal(err)
	}
	one := detect.NewDetector(cfg)
	rng := rand.New(rand.NewPCG(1, 2))
	token := func(n int) string {
		const chars = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ0123456789"
		b := make([]byte, n)
		for i := range b {
			b[i] = chars[rng.IntN(len(chars))]
		}
		return string(b)
	}
	texts := []string{
		"The user prefers tabs over spaces and dark mode.",
		strings.Repeat("The user prefers short answers. ", 32),
		"api_key = \"" + token(40) + "\"",
		"export SERVICE_TOKEN=" + token(36) + "\nand the rest of the note",
		"a token " + token(tokenRun-1) + " one short",
		"a token " + token(tokenRun) + " just long enough",
		"a token " + token(tokenRun+1) + " and " + token(64),
		"a_long_identifier_of_words_and_more_words_in_snake_case is a name",
	}
	for _, s := range secrettest.Samples() {
		texts = append(texts, s.Content, "note: "+s.Content+"\nsecond line "+token(40))
	}
	hit := 0
	for _, text := range texts {
		for _, f := range scanAsOne(t, one, text) {
			if f.Kind == entropyRule {
				hit++
			}
		}
	}
	if hit < 3 {
		t.Errorf("%s found %d secrets in the texts, want the tokens of %d characters and more", entropyRule, hit, tokenRun)
	}
}

// scanAsOne returns what Scan finds in text, and fails t if one detector of every rule
// finds anything else.
func scanAsOne(t *testing.T, one *detect.Detector, text string) []Finding {
	t.Helper()
	got, err := Scan(text)
	if err != nil {
		t.Fatal(err)
	}
	if want := findings(text, one.DetectString(text)); !reflect.DeepEqual(got, want) {
		t.Fatalf("Scan(%q) = %v; one detector finds %v", text, got, want)
	}
	return got
}

func TestGateOpen(t *testing.T) {
	entropy, vault, twilio, generic := gates[0], gates[1], gates[3], gates[4]
	for _, c := range []struct {
		g    gate
		s    string
		want bool
	}{
		{entropy, "", false},
		{entropy, strings.Repeat("a", tokenRun-1), false},
		{entropy, strings.Repeat("a", tokenRun), true},
		{entropy, "x " + strings.Repeat("A-_9", tokenRun/4), true},
		{entropy, strings.Repeat("ab", tokenRun/2-1) + "." + strings.Repeat("ab", tokenRun/2-1), false},
		{entropy, strings.Repeat("é", tokenRun), false},
		{vault, "It rains. " + strings.Repeat("a", 23), false},
		{vault, "It rains.s." + strings.Repeat("a", 23), false},
		{vault, "It rains.s." + strings.Repeat("a", 24), true},
		{vault, "ss." + strings.Repeat("Z9", 12), true},
		{vault, "hvs." + strings.Repeat("a_", 12), true},
		{vault, strings.Repeat("a", 24) + "s.", false},
		{twilio, "SK" + strings.Repeat("f", 31) + "g", false},
		{twilio, "sk" + strings.Repeat("f", 32), false},
		{twilio, "SSK" + strings.Repeat("F0", 16), true},
		{gate{open: after("aa", 2, func(c byte) bool { return c >= '0' && c <= '9' })}, "aaa12", true}, // leads that overlap
		{vault, "s." + strings.Repeat("\u212a", 8), true},                                              // Kelvin signs, which (?i:[a-z]) takes for k
		{generic, "key points: tests run", false},
		{generic, "The API key: abcdefghij", true},
		{generic, "the password of the service account in staging is = 'abcdefghij'", false},
		{generic, "password of the service account is: 'abcdefghij'", true},
		{generic, "\u212aey = abcdefghij", true},
		{generic, "key = ab\u212acdefghi", true},
	} {
		if got := c.g.open(c.s); got != c.want {
			t.Errorf("gate of %s open(%q) = %v, want %v", c.g.rule, c.s, got, c.want)
		}
	}
}

// TestGatesApply: every gate was read from its rule's expression as the rules are now. A
// rule whose expression changed (a new gitleaks) runs on every text instead, and this test
// says which gate to read again.
func TestGatesApply(t *testing.T) {
	ds, err := detectors()
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.gated) != len(gates) {
		cfg, _ := rules()
		for _, g := range gates {
			if r := cfg.Rules[g.rule]; r.Regex == nil || r.Regex.String() != g.regex {
				t.Errorf("the gate of %s was read from %s; the rule is now %v", g.rule, g.regex, r.Regex)
			}
		}
	}
}

// TestGatedAsOneDetector: on random texts made of what the gated rules' secrets and
// gitleaks' generic rule look for, Scan finds what one detector of every rule finds.
func TestGatedAsOneDetector(t *testing.T) {
	cfg, err := rules()
	if err != nil {
		t.Fatal(err)
	}
	one := detect.NewDetector(cfg)
	rng := rand.New(rand.NewPCG(3, 4))
	from := func(chars string, n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = chars[rng.IntN(len(chars))]
		}
		return string(b)
	}
	const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	words := []string{"access", "auth", "Api", "API", "aPi", "credential", "creds", "KEY", "passwd", "Password",
		"secret", "token", "\u212aey", "\u017fecret", "mykeyname"}
	word := func() string { return words[rng.IntN(len(words))] }
	span := func() string { return from(" \t_.-abXY09'\"\n", rng.IntN(32)) }
	assign := func() string {
		ops := []string{"=", ">", ":=", "::=", ":::=", "||", ":", "=>", "?=", ",", "|", "?"}
		return ops[rng.IntN(len(ops))] + from("`'\" \t=", rng.IntN(7))
	}
	secret := func() string {
		t := from(alnum+"_.=-+/", 8+rng.IntN(5))
		if i := rng.IntN(2 * len(t)); i < len(t) {
			t = t[:i] + "\u212a" + t[i:] // a Kelvin sign, which (?i:[a-z]) takes for k
		}
		return t
	}
	pieces := []func() string{
		func() string { return "s." + from(alnum, 20+rng.IntN(8)) },
		func() string { return "hvs." + from(alnum+"_-", 88+rng.IntN(6)) },
		func() string {
			return "ey" + from(alnum, 15+rng.IntN(6)) + ".ey" + from(alnum+"/_-", 15+rng.IntN(6)) + "." + from(alnum, 8+rng.IntN(4))
		},
		func() string { return "SK" + from("0123456789abcdefABCDEF", 30+rng.IntN(4)) },
		// generic-api-key: a key word, what may follow it, an assignment, quotes, a secret.
		word, span, assign, secret,
		func() string { return word() + span() + assign() + secret() + from(alnum, rng.IntN(9)) },
		func() string { return word() + span() + assign() + secret() + from(alnum, rng.IntN(9)) },
		func() string { return from("ab\u212a\u017f", 8+rng.IntN(5)) },
		func() string { return "The user likes short answers. " },
		func() string { return " " },
		func() string { return "\n" },
		func() string { return `"` },
		func() string { return from(alnum+"_-", 28+rng.IntN(8)) },
	}
	found := map[string]int{}
	for range 3000 {
		var b strings.Builder
		for range 1 + rng.IntN(10) {
			b.WriteString(pieces[rng.IntN(len(pieces))]())
		}
		for _, f := range scanAsOne(t, one, b.String()) {
			found[f.Kind]++
		}
	}
	for _, g := range gates {
		if found[g.rule] < 50 {
			t.Errorf("%s found %d secrets in the texts; the test needs more to say anything", g.rule, found[g.rule])
		}
	}
}
