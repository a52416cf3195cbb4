package secrets

import (
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/zricethezav/gitleaks/v8/config"
)

// semiGenericRules names the gated detector of the rules of semiGeneric's form.
const semiGenericRules = "the rules of a service's key assigned"

// Most of gitleaks' rules for a service's key have one form: the service's name, then what
// may follow a name, an assignment and quotes, then the key (gitleaks builds them so):
//
//	(?i)[\w.-]{0,50}?(?:NAME)(?:[ \t\w.-]{0,20})[\s'"]{0,3}(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)[\x60'"\s=]{0,5}(KEY)(?:[\x60'"\s;]|\\[nr]|$)
//
// The assignment starts with one of =>:|,? and is at most 4 characters long, and at most 5
// quotes or spaces follow it, so the key starts 1 to 9 characters after the assignment's
// first. A key holds at least so many characters of those that KEY can match (read from its
// syntax). A service's name in a note ("linear", "twitter") made gitleaks run its rule over
// the whole text: about 150 µs for 1 KB.
const (
	semiPrefix = `(?i)[\w.-]{0,50}?(?:`
	semiMiddle = `)(?:[ \t\w.-]{0,20})[\s'"]{0,3}(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)[\x60'"\s=]{0,5}(`
	semiSuffix = `)(?:[\x60'"\s;]|\\[nr]|$)`
)

// semiGeneric returns the rules of rs of that form, and a gate that they all share: an
// assignment followed by as many characters of a key as the shortest key of those rules
// holds, of the characters any of them can hold. A rule whose key it cannot read is left
// out, and so is one whose keys can be shorter than semiShortest characters: the gate is as
// selective as its shortest key, and prose has few words of 14 letters or more.
func semiGeneric(rs map[string]config.Rule) (map[string]config.Rule, func(string) bool) {
	out := map[string]config.Rule{}
	shortest := 0
	var chars [256]bool
	for id, r := range rs {
		if r.Regex == nil || strings.Contains(strings.ToLower(id), "generic") {
			continue // gitleaks' generic rules have a gate of their own (assignedKey)
		}
		key, ok := semiKey(r.Regex.String())
		if !ok {
			continue
		}
		re, err := syntax.Parse(key, syntax.Perl|syntax.FoldCase)
		if err != nil {
			continue
		}
		n, cs, ok := keyShape(re)
		if !ok || n < semiShortest {
			continue
		}
		out[id] = r
		if shortest == 0 || n < shortest {
			shortest = n
		}
		for c, in := range cs {
			chars[c] = chars[c] || in
		}
	}
	class := func(c byte) bool { return chars[c] }
	return out, func(s string) bool {
		for r := 0; r < len(s); r++ {
			if strings.IndexByte("=>:|,?", s[r]) < 0 {
				continue
			}
			for from := r + 1; from <= r+9; from++ {
				if runFrom(s, from, shortest, class) {
					return true
				}
			}
		}
		return false
	}
}

// semiShortest is the fewest characters of the keys of the rules that semiGeneric gates.
const semiShortest = 14

// semiKey returns the KEY of an expression of the form above. NAME and KEY must each parse
// on their own, so that the groups around them are theirs: a NAME such as "a)|(?:b" would
// make the expression an alternation whose first side matches "a" alone.
func semiKey(expr string) (string, bool) {
	if !strings.HasPrefix(expr, semiPrefix) || !strings.HasSuffix(expr, semiSuffix) {
		return "", false
	}
	i := strings.Index(expr, semiMiddle)
	if i < len(semiPrefix) {
		return "", false
	}
	name, key := expr[len(semiPrefix):i], expr[i+len(semiMiddle):len(expr)-len(semiSuffix)]
	for _, part := range []string{name, key} {
		if _, err := syntax.Parse(part, syntax.Perl|syntax.FoldCase); err != nil {
			return "", false
		}
	}
	return key, true
}

// keyShape reads from re the fewest characters that a match holds, and the bytes that its
// characters can be made of (any byte past ASCII if a character past ASCII can match). ok
// is false for syntax it does not read.
func keyShape(re *syntax.Regexp) (min int, bytes [256]bool, ok bool) {
	addRune := func(r rune) {
		if r >= utf8.RuneSelf {
			for c := utf8.RuneSelf; c < 256; c++ {
				bytes[c] = true
			}
		} else {
			bytes[r] = true
		}
	}
	merge := func(sub *syntax.Regexp) (int, bool) {
		n, bs, ok := keyShape(sub)
		for c, in := range bs {
			bytes[c] = bytes[c] || in
		}
		return n, ok
	}
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return 0, bytes, true
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			addRune(r)
			if re.Flags&syntax.FoldCase != 0 {
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					addRune(f)
				}
			}
		}
		return len(re.Rune), bytes, true
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1] && r < utf8.RuneSelf; r++ {
				addRune(r)
			}
			if re.Rune[i+1] >= utf8.RuneSelf {
				addRune(utf8.RuneSelf)
			}
		}
		return 1, bytes, true
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		for c := range bytes {
			bytes[c] = c != '\n' || re.Op == syntax.OpAnyChar
		}
		return 1, bytes, true
	case syntax.OpCapture, syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		n, ok := merge(re.Sub[0])
		switch re.Op {
		case syntax.OpStar, syntax.OpQuest:
			n = 0
		case syntax.OpRepeat:
			n *= re.Min
		}
		return n, bytes, ok
	case syntax.OpConcat, syntax.OpAlternate:
		total, least := 0, -1
		for _, sub := range re.Sub {
			n, ok := merge(sub)
			if !ok {
				return 0, bytes, false
			}
			total += n
			if least < 0 || n < least {
				least = n
			}
		}
		if re.Op == syntax.OpAlternate {
			return max(least, 0), bytes, true
		}
		return total, bytes, true
	}
	return 0, bytes, false
}
