package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// certReloader serves TLS with a certificate and key read from files, and reads them again
// on SIGHUP: a renewed certificate takes effect for new connections, and connections open
// meanwhile go on with the one they started with. A pair that does not load is refused
// and the one in use stays.
type certReloader struct {
	certFile, keyFile string
	log               *slog.Logger
	cur               atomic.Pointer[tls.Certificate]
}

func newCertReloader(certFile, keyFile string, log *slog.Logger) (*certReloader, error) {
	if certFile == "" || keyFile == "" {
		return nil, usageError{fmt.Errorf("TLS needs both --tls-cert and --tls-key")}
	}
	r := &certReloader{certFile: certFile, keyFile: keyFile, log: log}
	if err := r.reload(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *certReloader) reload() error {
	c, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("load the TLS certificate %s and key %s: %w", r.certFile, r.keyFile, err)
	}
	r.cur.Store(&c)
	return nil
}

// watch reloads the pair on each SIGHUP until ctx ends.
func (r *certReloader) watch(ctx context.Context) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				if err := r.reload(); err != nil {
					r.log.Error("SIGHUP: the new TLS certificate was not loaded; serving the one in use", "err", err)
				} else {
					r.log.Info("SIGHUP: reloaded the TLS certificate", "cert", r.certFile)
				}
			}
		}
	}()
}

func (r *certReloader) config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return r.cur.Load(), nil
		},
	}
}
