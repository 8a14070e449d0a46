package baton

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"
)

// next is the watch's next event (fails after 15 s).
func next(t testing.TB, w *Watch) Event {
	t.Helper()
	select {
	case e, ok := <-w.Events():
		if !ok {
			t.Fatalf("watch ended: %v", w.Err())
		}
		return e
	case <-time.After(15 * time.Second):
		t.Fatal("no watch event in 15 s")
	}
	return Event{}
}

// nextChange skips to the next EventChange.
func nextChange(t testing.TB, w *Watch) Event {
	t.Helper()
	for {
		if e := next(t, w); e.Kind == EventChange {
			return e
		}
	}
}

func TestValuesAndLockState(t *testing.T) {
	c := plainCluster(t)
	cl := connect(t, c, "values")
	ctx := context.Background()
	name := lockName(t, "a")
	st, err := cl.LockState(ctx, name)
	if err != nil || st.Held || len(st.Holders) != 0 || st.Name != name {
		t.Fatalf("state of a free lock: %+v %v", st, err)
	}
	h, err := cl.Lock(ctx, name, Value([]byte("first")), LockDelay(-1))
	if err != nil {
		t.Fatal(err)
	}
	ch := lockAsync(ctx, cl, name, Value([]byte("queued")), Wait(20*time.Second))
	c.waitLock(t, name, "total_waiters", 1)
	st, err = cl.LockState(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Held || st.Mode != ModeExclusive || st.TotalHolders != 1 || len(st.Holders) != 1 ||
		st.Holders[0].Fence != h.Fence() || string(st.Holders[0].Value) != "first" ||
		st.Holders[0].ClientName != "values" || st.Holders[0].Session != cl.SessionID() ||
		st.TotalWaiters != 1 || len(st.Waiters) != 1 || string(st.Waiters[0].Value) != "queued" ||
		st.Waiters[0].WaitMS <= 0 || st.Revision == 0 {
		t.Fatalf("state: %+v", st)
	}
	if err := h.Proclaim([]byte("second")); err != nil {
		t.Fatal(err)
	}
	st, _ = cl.LockState(ctx, name)
	if string(st.Holders[0].Value) != "second" {
		t.Fatalf("value after Proclaim: %q", st.Holders[0].Value)
	}
	if err := h.Proclaim(bytes.Repeat([]byte("x"), 20000)); !errors.Is(err, ErrTooBig) {
		t.Fatalf("Proclaim of 20000 bytes: %v", err)
	}
	h.Unlock()
	if err := h.Proclaim(nil); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("Proclaim after Unlock: %v", err)
	}
	r := await(t, ch, "waiter")
	if r.err != nil {
		t.Fatal(r.err)
	}
	r.h.Unlock()
	if _, err := cl.LockState(ctx, ""); !errors.Is(err, ErrInvalid) {
		t.Fatalf("LockState of an empty name: %v", err)
	}
	// C would see "a": the name is refused instead.
	if _, err := cl.TryLock(ctx, "a\x00b"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("TryLock of a name with a NUL: %v", err)
	}
	if _, err := cl.Watch(ctx, "a\x00b", false, 0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Watch of a key with a NUL: %v", err)
	}
}

func TestWatch(t *testing.T) {
	c := plainCluster(t)
	cl := connect(t, c, "watch")
	ctx := context.Background()
	name := lockName(t, "a")
	w, err := cl.Watch(ctx, name, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if e := next(t, w); e.Kind != EventState || e.State == nil || e.State.Held {
		t.Fatalf("first event: %+v", e)
	}
	if e := next(t, w); e.Kind != EventSynced {
		t.Fatalf("second event: %+v", e)
	}
	h, err := cl.Lock(ctx, name, Value([]byte("v1")))
	if err != nil {
		t.Fatal(err)
	}
	e := nextChange(t, w)
	if !e.State.Held || e.State.Holders[0].Fence != h.Fence() || string(e.State.Holders[0].Value) != "v1" {
		t.Fatalf("change at grant: %+v", e.State)
	}
	rev := e.Revision
	h.Unlock()
	e = nextChange(t, w)
	if e.State.Held || e.Revision <= rev {
		t.Fatalf("change at unlock: %+v", e)
	}

	// A prefix watch sees the locks under it only.
	pw, err := cl.Watch(ctx, lockName(t, "p-"), true, 0)
	if err != nil {
		t.Fatal(err)
	}
	if e := next(t, pw); e.Kind != EventSynced {
		t.Fatalf("prefix watch with nothing held: %+v", e)
	}
	cl.TryLock(ctx, lockName(t, "other")) // not under the prefix; never unlocked: Close frees it
	hp, err := cl.Lock(ctx, lockName(t, "p-1"))
	if err != nil {
		t.Fatal(err)
	}
	if e := nextChange(t, pw); e.State.Name != lockName(t, "p-1") {
		t.Fatalf("prefix change: %+v", e.State)
	}
	hp.Unlock()
	pw.Close()
	pw.Close()
	if _, ok := <-pw.Events(); ok {
		t.Fatal("events after Close")
	}

	// The context ends a watch.
	wctx, cancel := context.WithCancel(ctx)
	cw, err := cl.Watch(wctx, name, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	for range cw.Events() {
	}
	if !errors.Is(cw.Err(), context.Canceled) {
		t.Fatalf("Err after cancel: %v", cw.Err())
	}
	cw.Close()
}

func TestElections(t *testing.T) {
	c := plainCluster(t)
	a, b := connect(t, c, "cand-a"), connect(t, c, "cand-b")
	ctx := context.Background()
	el := lockName(t, "e")
	if _, _, err := a.Leader(ctx, el); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Leader of an empty election: %v", err)
	}
	obs, err := b.Observe(ctx, el)
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()
	la, err := a.Campaign(ctx, el, []byte("a:1"))
	if err != nil {
		t.Fatal(err)
	}
	if e := nextChange(t, obs); len(e.State.Holders) != 1 || string(e.State.Holders[0].Value) != "a:1" {
		t.Fatalf("observed first leader: %+v", e.State)
	}
	ch := make(chan result, 1)
	go func() {
		h, err := b.Campaign(ctx, el, []byte("b:1"))
		ch <- result{h, err}
	}()
	c.waitLock(t, el, "total_waiters", 1)
	ld, st, err := b.Leader(ctx, el)
	if err != nil || string(ld.Value) != "a:1" || ld.Fence != la.Fence() || st.TotalWaiters != 1 {
		t.Fatalf("Leader: %+v %v", ld, err)
	}
	if err := la.Proclaim([]byte("a:2")); err != nil {
		t.Fatal(err)
	}
	if e := nextChange(t, obs); string(e.State.Holders[0].Value) != "a:2" {
		t.Fatalf("observed proclaim: %+v", e.State)
	}
	la.Unlock() // resign
	r := await(t, ch, "second candidate")
	if r.err != nil || r.h.Fence() <= la.Fence() {
		t.Fatalf("second candidate: %v", r.err)
	}
	if e := nextChange(t, obs); len(e.State.Holders) != 1 || string(e.State.Holders[0].Value) != "b:1" {
		t.Fatalf("observed second leader: %+v", e.State)
	}
	r.h.Unlock()
}
