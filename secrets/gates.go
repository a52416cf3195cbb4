package secrets

import (
	"strings"
	"unicode/utf8"
)

// A gate is a check, in one pass over a text, without which a rule's expression cannot
// match it; Scan runs a gated rule, in a detector of its own, only on texts that pass its
// gate. The gated rules are those that were most of a scan's time: entropyRule has no
// keywords, so gitleaks ran it on every text (31 of 59 µs for a note of 1 KB); the keywords
// of the others are common in prose ("key", "api" and "token" in notes about software, "s."
// after a plural, "ey" and "sk" in many words), and each of their expressions then ran over
// the whole text. gitleaks' generic-api-key took 650 µs on a note of 1 KB that said "API"
// and "key" (BenchmarkScan).
//
// A gate may let through a text that its rule then finds nothing in, never the reverse
// (TestGatedAsOneDetector). Where an expression ignores case, its letters k and s also match
// the Kelvin sign and the long s (Unicode folds them), so those gates take any byte past
// ASCII as a letter.
type gate struct {
	rule  string
	regex string // the expression the gate was read from; a rule with another is not gated
	open  func(s string) bool
}

var gates = []gate{
	{rule: entropyRule, open: run(tokenRun, isTokenChar),
		regex: "(?m)(?:^|[\\s\"'=:,;(\\[{<>`])([A-Za-z0-9_\\-]{32,256})(?:$|[\\s\"',;)\\]}<>.`])"},
	// Both forms hold "s." (hvs. ends so) and then at least 24 of [\w-], or of [a-z0-9]
	// ignoring case.
	{rule: "vault-service-token", open: after("s.", 24, folded(isTokenChar)),
		regex: `\b((?:hvs\.[\w-]{90,120}|s\.(?i:[a-z0-9]{24})))(?:[\x60'"\s;]|\\[nr]|$)`},
	{rule: "jwt", open: after("ey", 17, isAlnum),
		regex: `\b(ey[a-zA-Z0-9]{17,}\.ey[a-zA-Z0-9\/\\_-]{17,}\.(?:[a-zA-Z0-9\/\\_-]{10,}={0,2})?)(?:[\x60'"\s;]|\\[nr]|$)`},
	{rule: "twilio-api-key", open: after("SK", 32, isHex), regex: `SK[0-9a-fA-F]{32}`},
	{rule: "generic-api-key", open: assignedKey,
		regex: `(?i)[\w.-]{0,50}?(?:access|auth|(?-i:[Aa]pi|API)|credential|creds|key|passw(?:or)?d|secret|token)(?:[ \t\w.-]{0,20})[\s'"]{0,3}(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)[\x60'"\s=]{0,5}([\w.=-]{10,150}|[a-z0-9][a-z0-9+/]{11,}={0,3})(?:[\x60'"\s;]|\\[nr]|$)`},
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isHex(c byte) bool { return c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c >= '0' && c <= '9' }

// isTokenChar: what entropyRule's tokens are made of (A-Z, a-z, 0-9, - and _), and \w with -.
func isTokenChar(c byte) bool { return isAlnum(c) || c == '-' || c == '_' }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

// folded is class ignoring case: any byte past ASCII may be part of a Kelvin sign or a long s.
func folded(class func(byte) bool) func(byte) bool {
	return func(c byte) bool { return c >= utf8.RuneSelf || class(c) }
}

// run: n characters of class in a row, anywhere.
func run(n int, class func(byte) bool) func(string) bool {
	return func(s string) bool {
		k := 0
		for i := 0; i < len(s); i++ {
			if !class(s[i]) {
				k = 0
			} else if k++; k >= n {
				return true
			}
		}
		return false
	}
}

// after: lead followed by n characters of class.
func after(lead string, n int, class func(byte) bool) func(string) bool {
	return func(s string) bool {
		for at := 0; ; at++ {
			k := strings.Index(s[at:], lead)
			if k < 0 {
				return false
			}
			at += k
			if runFrom(s, at+len(lead), n, class) {
				return true
			}
		}
	}
}

// runFrom reports whether s has n characters of class from i on.
func runFrom(s string, i, n int, class func(byte) bool) bool {
	if i+n > len(s) {
		return false
	}
	for _, c := range []byte(s[i : i+n]) {
		if !class(c) {
			return false
		}
	}
	return true
}

// keyWords begin the words that generic-api-key looks for (access, auth, api, credential,
// creds, key, passwd, password, secret, token), in lower case.
var keyWords = []string{"access", "auth", "api", "cred", "key", "passw", "secret", "token"}

// assignedKey is the gate of generic-api-key, whose secret is assigned to one of keyWords:
// the word, the rest of it and at most 20 of [ \t\w.-] and 3 of [\s'"] (together at most
// 29 characters after what keyWords holds of the word), an assignment that starts with one of
// =>:|,? and is at most 4 characters long, at most 5 of [`'"\s=], and at least 10
// characters of the secret, [\w.=-] or [a-z0-9+/], ignoring case. So the secret starts 1
// to 9 characters after the assignment's first.
func assignedKey(s string) bool {
	if strings.Contains(s, "\u212a") || strings.Contains(s, "\u017f") {
		return true // the expression takes them for k and s; without them, it is ASCII alone
	}
	lower := asciiLower(s)
	word := func(c byte) bool { return isTokenChar(c) || c == '.' || isSpace(c) || c == '\'' || c == '"' }
	secret := func(c byte) bool { return isTokenChar(c) || strings.IndexByte(".=+/", c) >= 0 }
	for _, w := range keyWords {
		for at := 0; ; at++ {
			k := strings.Index(lower[at:], w)
			if k < 0 {
				break
			}
			at += k
			// The first character past the word and what may follow it is the assignment's.
			j := at + len(w)
			for j < len(s) && j-at-len(w) < 29 && word(s[j]) {
				j++
			}
			if j == len(s) || strings.IndexByte("=>:|,?", s[j]) < 0 {
				continue
			}
			for from := j + 1; from <= j+9; from++ {
				if runFrom(s, from, 10, secret) {
					return true
				}
			}
		}
	}
	return false
}

// asciiLower is s with its ASCII letters in lower case, byte for byte.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
