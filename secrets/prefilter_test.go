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
		got, err := Scan(text)
		if err != nil {
			t.Fatal(err)
		}
		want := findings(text, one.DetectString(text))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Scan(%q) = %v; one detector finds %v", text, got, want)
		}
		for _, f := range got {
			if f.Kind == entropyRule {
				hit++
			}
		}
	}
	if hit < 3 {
		t.Errorf("%s found %d secrets in the texts, want the tokens of %d characters and more", entropyRule, hit, tokenRun)
	}
}

func TestHasTokenRun(t *testing.T) {
	for s, want := range map[string]bool{
		"":                              false,
		strings.Repeat("a", tokenRun-1): false,
		strings.Repeat("a", tokenRun):   true,
		"x " + strings.Repeat("A-_9", tokenRun/4):                                     true,
		strings.Repeat("ab", tokenRun/2-1) + "." + strings.Repeat("ab", tokenRun/2-1): false,
		strings.Repeat("é", tokenRun):                                                 false,
	} {
		if got := hasTokenRun(s); got != want {
			t.Errorf("hasTokenRun(%q) = %v, want %v", s, got, want)
		}
	}
}
