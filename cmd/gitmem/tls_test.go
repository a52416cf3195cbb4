package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// testCA is a certificate authority made for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gitmem test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue writes a certificate for 127.0.0.1 with the given serial, and its key, to the files.
func (ca *testCA) issue(t *testing.T, serial int64, certFile, keyFile string) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	// Written whole to a temporary name and renamed, as a renewal tool does.
	for _, f := range []struct {
		path string
		data []byte
	}{{certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})},
		{keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})}} {
		if err := os.WriteFile(f.path+".new", f.data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(f.path+".new", f.path); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTLS: gitmem serve --tls-cert/--tls-key serves HTTPS that a client verifies with the
// test CA; SIGHUP loads a renewed certificate while requests go on, none failing; a pair
// that does not load leaves the one in use; the CLI finds the server through the lock and
// reaches it over TLS.
func TestTLS(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "notes")
	ca := newTestCA(t)
	dir := t.TempDir()
	certFile, keyFile, caFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), filepath.Join(dir, "ca.pem")
	ca.issue(t, 100, certFile, keyFile)
	os.WriteFile(caFile, ca.pem, 0o644)
	cmd, banner, _ := startServe(t, c, "--tls-cert", certFile, "--tls-key", keyFile)
	url := regexp.MustCompile(`https://127\.0\.0\.1:\d+`).FindString(banner)
	if url == "" {
		t.Fatalf("no https URL in the banner:\n%s", banner)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	// A new connection per request, so that each sees the certificate in use when it starts.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true}}
	serial := func() int64 {
		t.Helper()
		resp, err := client.Get(url + "/v1/memory_stores")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		return resp.TLS.PeerCertificates[0].SerialNumber.Int64()
	}
	if s := serial(); s != 100 {
		t.Fatalf("serial %d", s)
	}
	if _, err := http.Get(url + "/v1/memory_stores"); err == nil {
		t.Fatal("a client without the CA trusted the server")
	}

	// Renewal under load.
	var failed atomic.Int64
	var done atomic.Bool
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !done.Load() {
				resp, err := client.Get(url + "/v1/memory_stores")
				if err != nil || resp.StatusCode != 200 {
					failed.Add(1)
				}
				if err == nil {
					resp.Body.Close()
				}
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	ca.issue(t, 200, certFile, keyFile)
	cmd.Process.Signal(syscall.SIGHUP)
	deadline := time.Now().Add(10 * time.Second)
	for serial() != 200 {
		if time.Now().After(deadline) {
			t.Fatal("SIGHUP did not load the renewed certificate")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	done.Store(true)
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d requests failed while the certificate was reloaded", n)
	}

	// A broken pair is refused; the renewed one stays in use.
	os.WriteFile(keyFile, []byte("not a key"), 0o600)
	cmd.Process.Signal(syscall.SIGHUP)
	time.Sleep(300 * time.Millisecond)
	if s := serial(); s != 200 {
		t.Fatalf("after a broken reload: serial %d", s)
	}

	// The CLI finds the server in the lock and trusts it through SSL_CERT_FILE.
	out, stderr, code := c.runEnv(append(os.Environ(), "SSL_CERT_FILE="+caFile), "", "stores", "list")
	if code != 0 {
		t.Fatalf("gitmem stores list over TLS: exit %d: %s", code, stderr)
	}
	mustContain(t, "stores over TLS", out, "notes")
}

// TestTLSNeedsBoth: one of the two flags alone is a usage error, and a pair that does not
// load says which files.
func TestTLSNeedsBoth(t *testing.T) {
	c := newCLI(t)
	if _, stderr, code := c.run("", "serve", "--addr", "127.0.0.1:0", "--tls-cert", "x.pem"); code != exitUsage {
		t.Fatalf("--tls-cert alone: exit %d: %s", code, stderr)
	}
	if _, stderr, code := c.run("", "serve", "--addr", "127.0.0.1:0", "--tls-cert", "x.pem", "--tls-key", "y.pem"); code == 0 || !regexp.MustCompile(`x\.pem.*y\.pem`).MatchString(stderr) {
		t.Fatalf("missing files: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(c.data); !os.IsNotExist(err) {
		t.Errorf("a refused serve made its data directory: %v", err)
	}
}
