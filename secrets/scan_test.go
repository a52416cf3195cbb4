package secrets_test

import (
	"strings"
	"testing"

	"github.com/gitmem/gitmem/secrets"
	"github.com/gitmem/gitmem/secrets/secrettest"
)

func TestScanFindsEachKind(t *testing.T) {
	for _, s := range secrettest.Samples() {
		t.Run(s.Name, func(t *testing.T) {
			fs, err := secrets.Scan(s.Content)
			if err != nil {
				t.Fatal(err)
			}
			if len(fs) != 1 {
				t.Fatalf("findings = %v, want one %s", fs, s.Kind)
			}
			f := fs[0]
			if f.Kind != s.Kind || f.Line != s.Line || f.Column != s.Column {
				t.Errorf("finding = %s, want %s at line %d, column %d", f, s.Kind, s.Line, s.Column)
			}
			if strings.Contains(secrets.Describe(fs), s.Secret) {
				t.Errorf("Describe echoes the secret: %s", secrets.Describe(fs))
			}
			red := secrets.Redact(s.Content, fs)
			if strings.Contains(red, s.Secret) || !strings.Contains(red, secrets.Marker(s.Kind)) {
				t.Errorf("Redact = %q, want the secret replaced by %s", red, secrets.Marker(s.Kind))
			}
			if again, _ := secrets.Scan(red); len(again) != 0 {
				t.Errorf("the redacted text still has findings: %v", again)
			}
		})
	}
}

func TestScanLeavesOrdinaryNotesAlone(t *testing.T) {
	notes := []string{
		"The user prefers tabs over spaces and dark mode.",
		"Commit 3f9a2c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 fixed the bug; see /projects/gitmem/internal/store/writer_test.go",
		"Set the password in the vault, never in the repo: postgres://app:${DB_PASSWORD}@db:5432/app",
		"ids: 123e4567-e89b-12d3-a456-426614174000, memstore_01JD2ZQ5X8K3M4N5P6Q7R8S9T0",
		"the CI writes with API key id: apikey_01JD2ZQ5X8K3M4N5P6Q7R8S9T0",
		"clone with http://gitmem:KEY@host/git/memstore_01JD2ZQ5X8K3M4N5P6Q7R8S9T0.git (scheme://user:password@host)",
		"TestWriterKeepsEveryAcknowledgedWriteUnderConcurrency is the long test name.",
		"日本語のメモ: 秘密はありません。",
	}
	for _, n := range notes {
		fs, err := secrets.Scan(n)
		if err != nil {
			t.Fatal(err)
		}
		if len(fs) != 0 {
			t.Errorf("Scan(%q) = %v, want nothing", n, fs)
		}
	}
}

func TestPositionsCountCharacters(t *testing.T) {
	gh := secrettest.GitHubToken()
	content := "première ligne\nclé: é " + gh
	fs, err := secrets.Scan(content)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 || fs[0].Line != 2 || fs[0].Column != 8 {
		t.Fatalf("findings = %v, want github-pat at line 2, column 8", fs)
	}
}

func TestRedactEverySecretOfAText(t *testing.T) {
	var b strings.Builder
	for _, s := range secrettest.Samples() {
		b.WriteString(s.Content + "\n")
	}
	fs, err := secrets.Scan(b.String())
	if err != nil {
		t.Fatal(err)
	}
	red := secrets.Redact(b.String(), fs)
	for _, s := range secrettest.Samples() {
		if strings.Contains(red, s.Secret) {
			t.Errorf("the %s secret survived redaction", s.Name)
		}
	}
}

// BenchmarkScan scans notes of about 1 KB: one that names no keyword of any rule, prose
// that names several that are common in English ("s." after a plural, "ey", "sk", "api"),
// and the same prose naming a service that a rule is about (Linear).
func BenchmarkScan(b *testing.B) {
	for _, c := range []struct{ name, note string }{
		{"plain", strings.Repeat("The user prefers short answers, tabs, and dark mode; deploys go out on Tuesdays.\n", 12)},
		{"prose", strings.Repeat("They asked for the API docs. The key points: tests run in CI, the task list is in the tracker, "+
			"and Sam keeps the release notes. ", 8)},
		{"service", strings.Repeat("They asked for the API docs. The key points: tests run in CI, the task list is in Linear, "+
			"and Sam keeps the release notes. ", 8)},
	} {
		b.Run(c.name, func(b *testing.B) {
			if _, err := secrets.Scan(c.note); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(c.note)))
			for b.Loop() {
				secrets.Scan(c.note)
			}
		})
	}
}
