package gitstore

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fillFields sets every exported field of the struct v points to (and of the structs it
// embeds or points to) to a value that is not zero, so that a field the codec forgets does
// not read back.
func fillFields(t *testing.T, v reflect.Value, seed int) {
	t.Helper()
	for i := 0; i < v.NumField(); i++ {
		f, sf := v.Field(i), v.Type().Field(i)
		if !sf.IsExported() && !sf.Anonymous {
			continue
		}
		seed++
		switch f.Kind() {
		case reflect.String:
			f.SetString(strings.Repeat("é", seed%3) + sf.Name)
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(seed) * 1_000_003)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Struct:
			fillFields(t, f, seed)
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
			fillFields(t, f.Elem(), seed)
		default:
			t.Fatalf("field %s of kind %s: teach the test (and the codec) about it", sf.Name, f.Kind())
		}
	}
}

// TestRecordCodec: every field of a memory and a version reads back as written, hex digests
// (stored as bytes) as well as any other string, and a malformed record is an error.
func TestRecordCodec(t *testing.T) {
	var m memRec
	fillFields(t, reflect.ValueOf(&m).Elem(), 0)
	got, err := readMemory(appendMemory(nil, m))
	if err != nil || got != m {
		t.Fatalf("memory read back as %+v (%v), want %+v", got, err, m)
	}
	m.Blob, m.SHA = strings.Repeat("ab", 20), strings.Repeat("0f", 32)
	raw := appendMemory(nil, m)
	if got, err := readMemory(raw); err != nil || got != m {
		t.Fatalf("memory with digests read back as %+v (%v), want %+v", got, err, m)
	}
	if len(raw) > 130 {
		t.Errorf("a memory takes %d bytes, want the digests as bytes", len(raw))
	}
	for _, s := range []string{"", "AB", "abc", "zz", "0f0F"} { // not lowercase hex of whole bytes
		m.Blob = s
		if got, err := readMemory(appendMemory(nil, m)); err != nil || got.Blob != s {
			t.Fatalf("blob %q read back as %q (%v)", s, got.Blob, err)
		}
	}

	var v verRec
	fillFields(t, reflect.ValueOf(&v).Elem(), 7)
	v.Commit = strings.Repeat("1e", 20)
	back, err := readVersion(appendVersion(nil, v))
	if err != nil || !reflect.DeepEqual(back, v) {
		t.Fatalf("version read back as %+v (%v), want %+v", back, err, v)
	}
	v.Redacted = nil
	if back, err := readVersion(appendVersion(nil, v)); err != nil || !reflect.DeepEqual(back, v) {
		t.Fatalf("unredacted version read back as %+v (%v)", back, err)
	}

	// Cut short at every length, or with a byte too many: an error, never a panic.
	full := appendVersion(nil, v)
	for n := range full {
		if _, err := readVersion(full[:n]); err == nil {
			t.Fatalf("a version cut to %d of %d bytes read without error", n, len(full))
		}
	}
	if _, err := readVersion(append(full, 0)); err == nil {
		t.Fatal("a version with a byte left over read without error")
	}
	if _, err := readMemory([]byte(`{"p":"/a.md"}`)); err == nil {
		t.Fatal("a JSON record of the old format read without error")
	}
}

func FuzzRecordCodec(f *testing.F) {
	f.Add(appendMemory(nil, memRec{Path: "/a.md", Blob: strings.Repeat("ab", 20), Size: 3}))
	f.Add(appendVersion(nil, verRec{ID: "memver_1", Redacted: &redaction{At: 1}}))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if m, err := readMemory(raw); err == nil {
			if again, err := readMemory(appendMemory(nil, m)); err != nil || again != m {
				t.Fatalf("memory %+v does not read back (%v)", m, err)
			}
		}
		if v, err := readVersion(raw); err == nil {
			if again, err := readVersion(appendVersion(nil, v)); err != nil || !reflect.DeepEqual(again, v) {
				t.Fatalf("version %+v does not read back (%v)", v, err)
			}
		}
	})
}

// TestDecodeStoreInfoShared: metadata decoded again from the same bytes comes from
// decodeStoreInfo's memory, and what one caller changes in its copy no other sees.
func TestDecodeStoreInfoShared(t *testing.T) {
	raw := []byte(`{"id":"memstore_1","name":"team","metadata":{"k":"v"},"archived_at":"2026-11-29T10:00:00Z",` +
		`"policy":{"review_paths":["/team/"],"review_exempt":["apikey_1"]}}`)
	var want StoreInfo // decoded apart, to compare with
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		got, err := decodeStoreInfo(bytes.Clone(raw))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decoded again: %+v; want %+v", got, want)
		}
		got.Metadata["k"] = "changed"
		*got.ArchivedAt = time.Time{}
		got.Policy.ReviewPaths[0] = "/changed/"
		got.Policy.ReviewExempt[0] = "changed"
	}
	other, err := decodeStoreInfo([]byte(`{"id":"memstore_2","name":"other"}`))
	if err != nil || other.ID != "memstore_2" || other.Metadata != nil {
		t.Fatalf("other metadata: %+v, %v", other, err)
	}
}
