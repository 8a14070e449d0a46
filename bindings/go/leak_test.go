package baton

import (
	"context"
	"os"
	"runtime"
	"testing"
	"time"
)

func openFDs(t testing.TB) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// settle polls until goroutines and fds are back to the baseline.
func settle(t testing.TB, goroutines, fds int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		g, f := runtime.NumGoroutine(), openFDs(t)
		if g <= goroutines && f <= fds {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			n := runtime.Stack(buf, true)
			t.Fatalf("%d goroutines (baseline %d), %d fds (baseline %d)\n%s", g, goroutines, f, fds, buf[:n])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestNoLeaks(t *testing.T) {
	c := plainCluster(t)
	name := lockName(t, "a")
	ctx := context.Background()
	// Warm up: the first connect makes what the process keeps for good.
	w, err := Connect(ctx, Options{Endpoints: c.Endpoints})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	runtime.GC()
	g0, f0 := runtime.NumGoroutine(), openFDs(t)

	for round := 0; round < 2; round++ {
		a, err := Connect(ctx, Options{Endpoints: c.Endpoints})
		if err != nil {
			t.Fatal(err)
		}
		b, err := Connect(ctx, Options{Endpoints: c.Endpoints})
		if err != nil {
			t.Fatal(err)
		}
		h, err := a.Lock(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		// Cancelled and timed-out waits.
		cctx, cancel := context.WithCancel(ctx)
		ch := lockAsync(cctx, b, name)
		c.waitLock(t, name, "total_waiters", 1)
		cancel()
		if r := await(t, ch, "cancelled lock"); r.err == nil {
			t.Fatal("cancelled lock granted")
		}
		tctx, tcancel := context.WithTimeout(ctx, 100*time.Millisecond)
		b.Lock(tctx, name)
		tcancel()
		// A granted lock whose context outlives the call.
		lctx, lcancel := context.WithCancel(ctx)
		defer lcancel()
		if h2, err := a.Lock(lctx, name+"-2"); err != nil {
			t.Fatal(err)
		} else {
			h2.Unlock()
		}
		// Watches: one closed, one left to Client.Close, one whose
		// context ends.
		w1, err := b.Watch(ctx, name, false, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Watch(ctx, "", true, 0); err != nil {
			t.Fatal(err)
		}
		wctx, wcancel := context.WithCancel(ctx)
		if _, err := a.Observe(wctx, name); err != nil {
			t.Fatal(err)
		}
		next(t, w1)
		w1.Close()
		wcancel()
		// A wait left to Client.Close, and a hold never unlocked.
		ch = lockAsync(ctx, b, name)
		c.waitLock(t, name, "total_waiters", 1)
		b.Close()
		if r := await(t, ch, "lock during Close"); r.err == nil {
			t.Fatal("granted during Close")
		}
		a.Close()
		waitClosed(t, h.Lost(), time.Second, "Lost of a hold at Close")
		c.waitLock(t, name, "total_holders", 0)
		settle(t, g0, f0)
	}
}
