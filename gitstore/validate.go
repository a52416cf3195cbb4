package gitstore

import (
	"encoding/hex"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/gitmem/gitmem/internal/suspect"
)

// Limits of the data model.
const (
	MaxContentBytes  = 102400
	MaxPathBytes     = 1024
	MaxPathSegments  = 20
	MaxSegmentBytes  = 255
	MaxNameChars     = 255
	MaxDescChars     = 1024
	MaxMetadataPairs = 16
	MaxMetaKeyChars  = 64
	MaxMetaValChars  = 512
)

// reservedDir holds store metadata in the tree; it is never a memory.
const reservedDir = ".gitmem"

// storeFile is the tree path of the store's metadata.
const storeFile = reservedDir + "/store.json"

// ValidatePath checks a memory path against the rules of the data model and returns an
// error that names the rule it breaks.
func ValidatePath(p string) error {
	if p == "" {
		return invalidf("path is empty: a memory path starts with / and names a file, like /notes/today.md")
	}
	if len(p) > MaxPathBytes {
		return invalidf("path is %d bytes long; the limit is %d bytes", len(p), MaxPathBytes)
	}
	if !utf8.ValidString(p) {
		return invalidf("path %q is not valid UTF-8", p)
	}
	if p[0] != '/' {
		return invalidf("path %q must start with /, as in %q", p, "/"+p)
	}
	if err := checkChars(p); err != nil {
		return err
	}
	if !norm.NFC.IsNormalString(p) {
		return invalidf("path %q is not in Unicode normal form C (NFC); normalize it first", p)
	}
	segs := strings.Split(p[1:], "/")
	if len(segs) > MaxPathSegments {
		return invalidf("path %q has %d segments; the limit is %d", p, len(segs), MaxPathSegments)
	}
	for _, s := range segs {
		switch s {
		case "":
			return invalidf("path %q has an empty segment (a doubled or trailing /)", p)
		case ".", "..":
			return invalidf("path %q has a %q segment; paths are absolute and have no . or .. segments", p, s)
		}
	}
	for _, s := range segs {
		if gitReserved(s) {
			return invalidf("path %q has a segment %q, which git reserves: a repository cannot hold it", p, s)
		}
	}
	if segs[0] == reservedDir {
		return invalidf("path %q is under /%s/, which is reserved for the store's own metadata", p, reservedDir)
	}
	return nil
}

// gitReserved tells whether git refuses a tree entry of this name, or gives it a meaning
// of its own: .git (git fsck and every checkout refuse it, also as .GIT, ".git." or the
// short name git~1 that Windows gives it) and .gitmodules (fsck parses it as submodule
// configuration, and hosts refuse pushes where that fails).
func gitReserved(seg string) bool {
	s := strings.ToLower(strings.TrimRight(seg, ". "))
	return s == ".git" || s == "git~1" || s == ".gitmodules" || s == "gitmod~1"
}

// checkChars refuses control and format characters and the line and paragraph separators.
func checkChars(p string) error {
	for i, r := range p {
		switch {
		case r == '\u2028' || r == '\u2029':
			return invalidf("path %q has a line or paragraph separator (U+%04X) at byte %d", p, r, i)
		case unicode.Is(unicode.Cc, r):
			return invalidf("path %q has a control character (U+%04X) at byte %d", p, r, i)
		case unicode.Is(unicode.Cf, r):
			return invalidf("path %q has a format character (U+%04X) at byte %d", p, r, i)
		}
	}
	return nil
}

// ValidateNewPath checks a path that a write brings into a store's tree as a whole (an
// import, a merge's conflict copy): ValidatePath, and the rules of portable names on every
// segment (see ValidateNewSegment). A write that adds a path to a tree checks only the
// segments that are new there, and case twins beside them, in the writer (checkNewNames).
func ValidateNewPath(p string) error {
	if err := ValidatePath(p); err != nil {
		return err
	}
	for i, seg := range treePath(p) {
		if err := ValidateNewSegment(p, seg, i == 0); err != nil {
			return err
		}
	}
	return nil
}

// windowsDevices are the names Windows reserves for devices, as a whole name or before the
// first dot (aux.md is the device AUX too), in any case.
var windowsDevices = func() map[string]bool {
	m := map[string]bool{"con": true, "prn": true, "aux": true, "nul": true, "conin$": true, "conout$": true}
	for d := '1'; d <= '9'; d++ {
		m["com"+string(d)] = true
		m["lpt"+string(d)] = true
	}
	return m
}()

// windowsForbidden are the printable characters Windows does not allow in a file name.
const windowsForbidden = `:*?<>|"\`

// ValidateNewSegment checks one segment that a write brings into a store's tree (top: it is
// a folder or file at the root) against the rules of names that every clone can hold: git
// stores any name, but a checkout fails for everyone on a name longer than file systems
// allow, and on Windows or macOS for the names below. Names already in a tree stay
// readable, changeable in place, and can be renamed away or deleted.
func ValidateNewSegment(p, seg string, top bool) error {
	const why = "names that break clones are refused"
	if len(seg) > MaxSegmentBytes {
		return invalidf("path %q has a segment of %d bytes; the limit is %d bytes per segment, as file systems allow no longer name, so git clone fails for everyone (%s)",
			p, len(seg), MaxSegmentBytes, why)
	}
	if top && strings.EqualFold(seg, reservedDir) {
		return invalidf("path %q is under /%s/, a case variant of /%s/, which is reserved for the store's metadata (and a clone on macOS or Windows cannot hold both)",
			p, seg, reservedDir)
	}
	if i := strings.IndexAny(seg, windowsForbidden); i >= 0 {
		return invalidf("path %q has the character %q in segment %q, which Windows does not allow in file names: a clone on Windows fails (%s; the characters are %s)",
			p, seg[i], seg, why, windowsForbidden)
	}
	if strings.HasSuffix(seg, ".") || strings.HasSuffix(seg, " ") {
		return invalidf("path %q has a segment %q that ends with a dot or a space, which Windows drops from file names: a clone on Windows fails (%s)", p, seg, why)
	}
	base, _, _ := strings.Cut(seg, ".")
	if dev := strings.ToLower(strings.TrimRight(base, " ")); windowsDevices[dev] {
		return invalidf("path %q has a segment %q whose name Windows reserves for the device %s (with any extension, in any case): a clone on Windows fails (%s)",
			p, seg, strings.ToUpper(dev), why)
	}
	return nil
}

// ValidateJSONText checks the raw bytes of a JSON document before it is decoded, since
// encoding/json turns what it cannot decode into U+FFFD silently: the bytes must be valid
// UTF-8, and every \u escape of a UTF-16 surrogate must be half of a pair.
func ValidateJSONText(what string, raw []byte) error {
	if !utf8.Valid(raw) {
		i := 0
		for i < len(raw) {
			r, n := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return invalidf("%s is not valid UTF-8 (first bad byte at offset %d)", what, i)
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' || i+1 >= len(raw) {
			continue
		}
		i++ // the escaped character; \\ is one escape
		if raw[i] != 'u' {
			continue
		}
		r := hex4(raw[i+1:])
		switch {
		case r >= 0xD800 && r < 0xDC00:
			if i+10 < len(raw) && raw[i+5] == '\\' && raw[i+6] == 'u' {
				if lo := hex4(raw[i+7:]); lo >= 0xDC00 && lo < 0xE000 {
					i += 10
					continue
				}
			}
			fallthrough
		case r >= 0xDC00 && r < 0xE000:
			return invalidf("%s has a \\u escape of a UTF-16 surrogate (%s) without its other half at offset %d: it is no character", what, raw[i-1:i+5], i-1)
		}
	}
	return nil
}

// hex4 is the value of the 4 hex digits at the start of b, or -1.
func hex4(b []byte) int {
	if len(b) < 4 {
		return -1
	}
	v := 0
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			v = v*16 + int(c-'0')
		case c >= 'a' && c <= 'f':
			v = v*16 + int(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v*16 + int(c-'A'+10)
		default:
			return -1
		}
	}
	return v
}

// ValidatePathPrefix checks a listing prefix: "" or a path ending with "/".
func ValidatePathPrefix(prefix string) error {
	if prefix == "" || prefix == "/" {
		return nil
	}
	if !strings.HasSuffix(prefix, "/") {
		return invalidf("path_prefix %q must end with /", prefix)
	}
	if err := ValidatePath(strings.TrimSuffix(prefix, "/")); err != nil {
		return invalidf("path_prefix %q is not a valid directory: %s", prefix, err.Error())
	}
	return nil
}

// ValidateContent checks memory content: valid UTF-8 of at most MaxContentBytes bytes.
func ValidateContent(c string) error {
	if len(c) > MaxContentBytes {
		return &Error{Kind: KindInvalid, Rule: RuleTooLarge, Message: fmt.Sprintf("content is %d bytes; the limit is %d bytes", len(c), MaxContentBytes)}
	}
	if !utf8.ValidString(c) {
		for i := 0; i < len(c); {
			r, n := utf8.DecodeRuneInString(c[i:])
			if r == utf8.RuneError && n <= 1 {
				return invalidf("content is not valid UTF-8 (first bad byte at offset %d)", i)
			}
			i += n
		}
	}
	return nil
}

// ValidateSHA256 checks a content hash given by a caller: 64 lowercase hex digits.
func ValidateSHA256(field, h string) error {
	if len(h) != 64 || strings.ToLower(h) != h {
		return invalidf("%s must be 64 lowercase hex digits, got %q", field, h)
	}
	if _, err := hex.DecodeString(h); err != nil {
		return invalidf("%s must be 64 lowercase hex digits, got %q", field, h)
	}
	return nil
}

func validateStoreName(name string) error {
	if name == "" {
		return invalidf("name is required and must not be empty")
	}
	if n := utf8.RuneCountInString(name); n > MaxNameChars {
		return invalidf("name is %d characters; the limit is %d", n, MaxNameChars)
	}
	if msg := suspect.LineError("name", name); msg != "" {
		return invalidf("%s", msg)
	}
	if !utf8.ValidString(name) {
		return invalidf("name is not valid UTF-8")
	}
	return nil
}

// validateDescription checks a store's description: at most MaxDescChars characters of
// UTF-8, lines (\n or \r\n, as a browser sends a textarea's) and tabs but no other control
// character (package suspect, which the proposals' comments follow too).
func validateDescription(d string) error {
	if n := utf8.RuneCountInString(d); n > MaxDescChars {
		return invalidf("description is %d characters; the limit is %d", n, MaxDescChars)
	}
	if !utf8.ValidString(d) {
		return invalidf("description is not valid UTF-8")
	}
	if msg := suspect.TextError("description", d); msg != "" {
		return invalidf("%s", msg)
	}
	return nil
}

func validateMetadata(m map[string]string) error {
	if len(m) > MaxMetadataPairs {
		return invalidf("metadata has %d keys; the limit is %d", len(m), MaxMetadataPairs)
	}
	for k, v := range m {
		if n := utf8.RuneCountInString(k); n < 1 || n > MaxMetaKeyChars {
			return invalidf("metadata key %q must be 1 to %d characters", k, MaxMetaKeyChars)
		}
		if n := utf8.RuneCountInString(v); n > MaxMetaValChars {
			return invalidf("metadata value of key %q is %d characters; the limit is %d", k, n, MaxMetaValChars)
		}
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return invalidf("metadata key %q or its value is not valid UTF-8", k)
		}
	}
	return nil
}
