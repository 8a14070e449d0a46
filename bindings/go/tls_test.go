package baton

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestTLSWithToken(t *testing.T) {
	c := secureCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := Connect(ctx, Options{Endpoints: c.Endpoints, TLSCA: c.CA, Token: c.Token, ClientName: "tls"})
	if err != nil {
		t.Fatalf("Connect with TLS and a token: %v", err)
	}
	defer cl.Close()
	name := lockName(t, "a")
	h, err := cl.Lock(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if n := c.lockNumber(t, name, "fence"); n != int64(h.Fence()) {
		t.Fatalf("lock-info fence %d, hold's %d", n, h.Fence())
	}
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}

	_, err = Connect(ctx, Options{Endpoints: c.Endpoints, TLSCA: c.CA, Token: "not-a-token"})
	if !errors.Is(err, ErrAuth) {
		t.Fatalf("Connect with a wrong token: %v", err)
	}
	_, err = Connect(ctx, Options{Endpoints: c.Endpoints, Token: c.Token, ConnectTimeout: 3 * time.Second})
	if err == nil {
		t.Fatal("Connect in plaintext to a TLS cluster succeeded")
	}

	// A reader with the read token: it reads, it cannot lock.
	r, err := Connect(ctx, Options{Endpoints: c.Endpoints, TLSCA: c.CA, Token: c.ReadToken, ReadOnly: true})
	if err != nil {
		t.Fatalf("reader: %v", err)
	}
	defer r.Close()
	if _, err := r.LockState(ctx, name); err != nil {
		t.Fatalf("reader's LockState: %v", err)
	}
	if _, err := r.Lock(ctx, name); !errors.Is(err, ErrSession) {
		t.Fatalf("reader's Lock: %v", err)
	}
}
