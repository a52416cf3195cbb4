package apikeys

import (
	"strings"
	"testing"
)

func TestKeys(t *testing.T) {
	dir := t.TempDir()
	k, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if any, _ := k.AnyActive(); any {
		t.Fatal("a new data directory has keys")
	}
	key, secret, err := k.Create("ci", ReadOnly, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(key.ID, "apikey_") || !strings.HasPrefix(secret, "gitmem_") || strings.Contains(key.Hash, secret) {
		t.Fatalf("key %+v, secret %q", key, secret)
	}
	// Another handle on the same file (the CLI while a server runs) sees the change.
	other, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, ok, err := other.Authenticate(secret)
	if err != nil || !ok || got.ID != key.ID || got.Access != ReadOnly {
		t.Fatalf("authenticate: %+v %v %v", got, ok, err)
	}
	if _, ok, _ := other.Authenticate(secret + "x"); ok {
		t.Fatal("a wrong secret authenticated")
	}
	if _, err := k.Revoke("ci"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := other.Authenticate(secret); ok {
		t.Fatal("a revoked key authenticated")
	}
	if _, err := k.Revoke("nope"); err == nil || !strings.Contains(err.Error(), "no key with id or name") {
		t.Fatalf("revoke unknown: %v", err)
	}
	if _, _, err := k.Create("x", "admin", ""); err == nil || !strings.Contains(err.Error(), "read_write, read_only or propose") {
		t.Fatalf("bad access: %v", err)
	}
	keys, _ := other.List()
	if len(keys) != 1 || keys[0].Active() {
		t.Fatalf("list: %+v", keys)
	}
}
