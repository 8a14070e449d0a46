package baton

import (
	"context"
	"errors"
	"testing"
	"time"
)

func waitClosed(t testing.TB, ch <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("%s: not within %v", what, d)
	}
}

func TestLostAfterForcedRelease(t *testing.T) {
	c := plainCluster(t)
	cl := connect(t, c, "lost")
	name := lockName(t, "a")
	h, err := cl.Lock(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	other, err := cl.Lock(context.Background(), lockName(t, "b"))
	if err != nil {
		t.Fatal(err)
	}
	if h.LostReason() != nil {
		t.Fatal("lost before the release")
	}
	if st, out := c.ctl(t, "release", "--force", name, "--now"); st != 0 {
		t.Fatalf("batonctl release --force: exit %d: %s", st, out)
	}
	waitClosed(t, h.Lost(), 15*time.Second, "Lost after a forced release")
	if !errors.Is(h.LostReason(), ErrLost) {
		t.Fatalf("LostReason: %v", h.LostReason())
	}
	if err := h.Unlock(); !errors.Is(err, ErrLost) {
		t.Fatalf("Unlock of a lost lock: %v", err)
	}
	// Only that lock: the session and its other hold go on.
	select {
	case <-other.Lost():
		t.Fatal("the other hold was declared lost")
	default:
	}
	if err := other.Unlock(); err != nil {
		t.Fatalf("Unlock of the other hold: %v", err)
	}
	h2, err := cl.Lock(context.Background(), name)
	if err != nil || h2.Fence() <= h.Fence() {
		t.Fatalf("Lock after the release: %v", err)
	}
	h2.Unlock()
}

func TestFailoverUnderHolder(t *testing.T) {
	c := ownCluster(t)
	ctx := context.Background()
	cl, err := Connect(ctx, Options{Endpoints: c.Endpoints, SessionTTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	name := lockName(t, "a")
	h, err := cl.Lock(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	old := c.leader(t)
	c.do(t, "kill "+itoa(old)+" 9")
	if now := c.leader(t); now == old {
		t.Fatalf("leader still %d after kill -9", old)
	}
	st, err := cl.LockState(ctx, name)
	if err != nil || len(st.Holders) != 1 || st.Holders[0].Fence != h.Fence() ||
		st.Holders[0].Session != cl.SessionID() {
		t.Fatalf("state after failover: %+v %v", st, err)
	}
	select {
	case <-h.Lost():
		t.Fatalf("lost at failover: %v", h.LostReason())
	case <-time.After(time.Second):
	}
	if err := h.Unlock(); err != nil {
		t.Fatalf("Unlock after failover: %v", err)
	}
	c.waitLock(t, name, "total_holders", 0)
	c.do(t, "restart "+itoa(old))
}

func TestLostAfterSessionExpiry(t *testing.T) {
	c := plainCluster(t)
	cl := connect(t, c, "expired")
	ctx := context.Background()
	name := lockName(t, "a")
	h, err := cl.Lock(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	old := cl.SessionID()
	if st, out := c.ctl(t, "expire", itoa(int(old))); st != 0 {
		t.Fatalf("batonctl expire: exit %d: %s", st, out)
	}
	waitClosed(t, h.Lost(), 15*time.Second, "Lost after the session expired")
	if !errors.Is(h.LostReason(), ErrSession) {
		t.Fatalf("LostReason: %v", h.LostReason())
	}
	if err := h.Unlock(); !errors.Is(err, ErrLost) {
		t.Fatalf("Unlock of a lost lock: %v", err)
	}
	// The next call opens a fresh session.
	h2, err := cl.Lock(ctx, name)
	if err != nil {
		t.Fatalf("Lock after the expiry: %v", err)
	}
	if cl.SessionID() == old {
		t.Fatalf("session id %d kept", old)
	}
	h2.Unlock()
}
