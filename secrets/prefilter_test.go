package secrets

import (
	"math/rand/v2"
	"reflect"
	"regexp"
	"regexp/syntax"
	"strings"
	"testing"

	"github.com/zricethezav/gitleaks/v8/config"
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
	cfg, err := rules()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gates {
		if r := cfg.Rules[g.rule]; r.Regex == nil || r.Regex.String() != g.regex {
			t.Errorf("the gate of %s was read from %s; the rule is now %v", g.rule, g.regex, r.Regex)
		}
	}
	// And most rules for a service's key have semiGeneric's form: fewer would say that a
	// new gitleaks writes them otherwise.
	semi, open := semiGeneric(cfg.Rules)
	if len(semi) < 90 {
		t.Errorf("%d rules have the form of a service's key assigned (semigeneric.go), want the 93 or so of gitleaks 8.30", len(semi))
	}
	// linkedin-client-id's keys, [a-z0-9]{14}, are the shortest of gitleaks 8.30's: the
	// gate opens for 14 key characters that start at most 9 after an assignment's first.
	for s, want := range map[string]bool{
		"x= " + strings.Repeat("a", semiShortest):             true,
		"x= " + strings.Repeat("a", semiShortest-1):           false,
		"x=" + strings.Repeat(" ", 8) + "0123456789abcd":      true,
		"x=" + strings.Repeat(" ", 9) + "0123456789abcd":      false,
		"x?" + strings.Repeat(" ", 8) + "0123456789abcd":      true,
		"the Linear board lists a\nmaintainability checklist": false,
	} {
		if got := open(s); got != want {
			t.Errorf("the gate of a service's key assigned: open(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestSemiGenericFormOnly: an expression that starts and ends as semiGeneric's form and
// whose key parses, but whose name closes the group it is in, is not of that form: it is
// an alternation, one side of which matches the name alone, with no key assigned.
func TestSemiGenericFormOnly(t *testing.T) {
	re := regexp.MustCompile(semiPrefix + "foo)|(?:bar" + semiMiddle + "[a-z0-9]{20}" + semiSuffix)
	const text = "the foo service"
	if !re.MatchString(text) {
		t.Fatalf("%s does not match %q", re, text)
	}
	semi, open := semiGeneric(map[string]config.Rule{"x": {RuleID: "x", Regex: re}})
	if len(semi) > 0 && !open(text) {
		t.Errorf("semiGeneric takes %s, and its gate is closed on %q, which it matches", re, text)
	}
}

// TestSemiGenericAsOneDetector: for each rule of semiGeneric's form, on texts that assign
// it a key made from its own expression (one that matches, one cut short, one in quotes,
// around words), Scan finds what one detector of every rule finds.
func TestSemiGenericAsOneDetector(t *testing.T) {
	cfg, err := rules()
	if err != nil {
		t.Fatal(err)
	}
	one := detect.NewDetector(cfg)
	rng := rand.New(rand.NewPCG(5, 6))
	semi, _ := semiGeneric(cfg.Rules)
	found := 0
	for id, r := range semi {
		key, _ := semiKey(r.Regex.String())
		re, err := syntax.Parse(key, syntax.Perl|syntax.FoldCase)
		if err != nil {
			t.Fatal(err)
		}
		for range 6 {
			k := matching(rng, re)
			if rng.IntN(3) == 0 {
				k = k[:len(k)-1-rng.IntN(3)] // too short for the rule, maybe not for the gate
			}
			name := r.Keywords[rng.IntN(len(r.Keywords))]
			if rng.IntN(2) == 0 {
				name = strings.ToUpper(name)
			}
			ops := []string{"=", ": ", " := ", ", ", "=> '", "?=\"", "::=", "||"}
			text := "The note says " + name + "_token" + ops[rng.IntN(len(ops))] + k + "\nand goes on."
			for _, f := range scanAsOne(t, one, text) {
				if f.Kind == id {
					found++
				}
			}
		}
	}
	if found < len(semi) {
		t.Errorf("the rules of a service's key found %d keys in %d rules' texts; the test needs more to say anything", found, len(semi))
	}
}

// matching returns a string that re matches: ASCII where a class allows it, but now and
// then a character past ASCII that the class holds (the Kelvin sign for k under (?i)).
func matching(rng *rand.Rand, re *syntax.Regexp) string {
	var b strings.Builder
	var gen func(re *syntax.Regexp)
	gen = func(re *syntax.Regexp) {
		switch re.Op {
		case syntax.OpLiteral:
			b.WriteString(string(re.Rune))
		case syntax.OpCharClass:
			var ascii, past []rune // past ASCII: the Kelvin sign and the long s, where folding adds them
			for i := 0; i+1 < len(re.Rune); i += 2 {
				for r := re.Rune[i]; r <= re.Rune[i+1] && r < 128; r++ {
					ascii = append(ascii, r)
				}
				for _, r := range []rune{'\u212a', '\u017f', 'é'} {
					if re.Rune[i] <= r && r <= re.Rune[i+1] {
						past = append(past, r)
					}
				}
			}
			if len(past) > 0 && rng.IntN(8) == 0 {
				b.WriteRune(past[rng.IntN(len(past))])
			} else {
				b.WriteRune(ascii[rng.IntN(len(ascii))])
			}
		case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
			b.WriteByte('x')
		case syntax.OpCapture:
			gen(re.Sub[0])
		case syntax.OpConcat:
			for _, sub := range re.Sub {
				gen(sub)
			}
		case syntax.OpAlternate:
			gen(re.Sub[rng.IntN(len(re.Sub))])
		case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
			lo, hi := re.Min, re.Max
			switch re.Op {
			case syntax.OpStar:
				lo, hi = 0, 2
			case syntax.OpPlus:
				lo, hi = 1, 3
			case syntax.OpQuest:
				lo, hi = 0, 1
			}
			if hi < 0 {
				hi = lo + 2
			}
			for range lo + rng.IntN(hi-lo+1) {
				gen(re.Sub[0])
			}
		}
	}
	gen(re)
	return b.String()
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

// TestKeyShape: the fewest characters of a key, and its bytes: under (?i) a class or a
// literal with k or s also takes the Kelvin sign or the long s, whose bytes are past ASCII.
func TestKeyShape(t *testing.T) {
	for _, c := range []struct {
		expr      string
		min       int
		in, out   string
		pastASCII bool
	}{
		{`[a-z0-9]{14}`, 14, "az09AZ", "_-. ", true},
		{`(?-i:[a-f0-9]){2,}x`, 3, "af09xX", "gzAF_", false},
		{`key-[0-9]{4}|ab`, 2, "keyKEY-09abAB", "cz_", true},
		{`\d{3}(?:-\d{2})?`, 3, "09-", "a_", false},
		{`(?s:.)`, 1, "a\n", "", true},
	} {
		re, err := syntax.Parse(c.expr, syntax.Perl|syntax.FoldCase)
		if err != nil {
			t.Fatal(err)
		}
		min, bytes, ok := keyShape(re)
		if !ok || min != c.min || bytes[0xE2] != c.pastASCII {
			t.Errorf("keyShape(%s) = %d, past ASCII %v, %v; want %d, %v", c.expr, min, bytes[0xE2], ok, c.min, c.pastASCII)
		}
		for _, b := range []byte(c.in) {
			if !bytes[b] {
				t.Errorf("keyShape(%s): %q is not among its bytes", c.expr, b)
			}
		}
		for _, b := range []byte(c.out) {
			if bytes[b] {
				t.Errorf("keyShape(%s): %q is among its bytes", c.expr, b)
			}
		}
	}
}
