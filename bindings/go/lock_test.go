package baton

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// connect opens a client of c, closed when the test ends.
func connect(t testing.TB, c *cluster, name string) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := Connect(ctx, Options{Endpoints: c.Endpoints, ClientName: name})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// lockName is a lock name of this test's own.
func lockName(t testing.TB, suffix string) string {
	return "go-" + strings.ReplaceAll(t.Name(), "/", "-") + "-" + suffix
}

// result of a lock call made in a goroutine.
type result struct {
	h   *Hold
	err error
}

func lockAsync(ctx context.Context, cl *Client, name string, opts ...LockOption) chan result {
	ch := make(chan result, 1)
	go func() {
		h, err := cl.Lock(ctx, name, opts...)
		ch <- result{h, err}
	}()
	return ch
}

func await(t testing.TB, ch chan result, what string) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no answer in 30 s", what)
	}
	return result{}
}

func TestLockUnlockFences(t *testing.T) {
	c := plainCluster(t)
	cl := connect(t, c, "fences")
	ctx := context.Background()
	name := lockName(t, "a")
	var last uint64
	for i := 0; i < 3; i++ {
		h, err := cl.Lock(ctx, name)
		if err != nil {
			t.Fatalf("Lock %d: %v", i, err)
		}
		if h.Name() != name || h.Fence() <= last {
			t.Fatalf("hold %d: name %q fence %d after %d", i, h.Name(), h.Fence(), last)
		}
		last = h.Fence()
		if n := c.lockNumber(t, name, "fence"); n != int64(last) {
			t.Fatalf("lock-info fence %d, hold's %d", n, last)
		}
		if err := h.Unlock(); err != nil {
			t.Fatalf("Unlock: %v", err)
		}
		if err := h.Unlock(); err != nil {
			t.Fatalf("second Unlock: %v", err)
		}
	}
	c.waitLock(t, name, "total_holders", 0)
}

func TestTryLockWouldBlock(t *testing.T) {
	c := plainCluster(t)
	a, b := connect(t, c, "try-a"), connect(t, c, "try-b")
	ctx := context.Background()
	name := lockName(t, "a")
	h, err := a.Lock(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.TryLock(ctx, name)
	var be *Error
	if !errors.Is(err, ErrWouldBlock) || !errors.As(err, &be) || be.Code != ErrWouldBlock {
		t.Fatalf("TryLock of a held lock: %v", err)
	}
	if !strings.Contains(err.Error(), "BATON_EWOULDBLOCK") {
		t.Fatalf("error text %q", err.Error())
	}
	// Another goroutine of the holder's own client is another owner: it
	// too finds the lock busy.
	if _, err = a.TryLock(ctx, name); !errors.Is(err, ErrWouldBlock) {
		t.Fatalf("TryLock from the holder's client: %v", err)
	}
	if n := c.lockNumber(t, name, "total_waiters"); n != 0 {
		t.Fatalf("a try left %d waiters", n)
	}
	h.Unlock()
	h2, err := b.TryLock(ctx, name)
	if err != nil {
		t.Fatalf("TryLock of a free lock: %v", err)
	}
	h2.Unlock()
}

// childMain is this test binary run as another process (BATON_GO_CHILD):
// it locks BATON_GO_LOCK, prints "fence N", waits for a line on stdin,
// unlocks and prints "unlocked".
func childMain() int {
	ctx := context.Background()
	cl, err := Connect(ctx, Options{Endpoints: os.Getenv("BATON_GO_ENDPOINTS"), ClientName: "child"})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	defer cl.Close()
	h, err := cl.Lock(ctx, os.Getenv("BATON_GO_LOCK"))
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("fence", h.Fence())
	bufio.NewReader(os.Stdin).ReadString('\n')
	if err := h.Unlock(); err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("unlocked")
	return 0
}

func TestContentionBetweenProcesses(t *testing.T) {
	c := plainCluster(t)
	name := lockName(t, "a")
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), "BATON_GO_CHILD=1", "BATON_GO_ENDPOINTS="+c.Endpoints, "BATON_GO_LOCK="+name)
	in, _ := child.StdinPipe()
	outp, _ := child.StdoutPipe()
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); child.Wait() }()
	out := bufio.NewReader(outp)
	line, _ := out.ReadString('\n')
	line = strings.TrimSpace(line)
	ok := strings.HasPrefix(line, "fence ")
	childFence, err := strconv.ParseUint(strings.TrimPrefix(line, "fence "), 10, 64)
	if !ok || err != nil {
		t.Fatalf("child: %q", line)
	}
	cl := connect(t, c, "parent")
	ctx := context.Background()
	if _, err := cl.TryLock(ctx, name); !errors.Is(err, ErrWouldBlock) {
		t.Fatalf("TryLock while the child holds: %v", err)
	}
	ch := lockAsync(ctx, cl, name)
	c.waitLock(t, name, "total_waiters", 1)
	select {
	case r := <-ch:
		t.Fatalf("granted while the child holds: %v", r.err)
	default:
	}
	in.Write([]byte("go\n"))
	r := await(t, ch, "Lock after the child's unlock")
	if r.err != nil || r.h.Fence() <= childFence {
		t.Fatalf("Lock: %v (fence after %d)", r.err, childFence)
	}
	if line, _ := out.ReadString('\n'); strings.TrimSpace(line) != "unlocked" {
		t.Fatalf("child: %q", line)
	}
	if err := r.h.Unlock(); err != nil {
		t.Fatal(err)
	}
}

func TestGoroutinesOfOneClientInTurn(t *testing.T) {
	c := plainCluster(t)
	cl := connect(t, c, "turns")
	ctx := context.Background()
	name := lockName(t, "a")
	h0, err := cl.Lock(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	first := lockAsync(ctx, cl, name)
	c.waitLock(t, name, "total_waiters", 1)
	second := lockAsync(ctx, cl, name)
	c.waitLock(t, name, "total_waiters", 2)
	if err := h0.Unlock(); err != nil {
		t.Fatal(err)
	}
	r1 := await(t, first, "first waiter")
	if r1.err != nil || r1.h.Fence() <= h0.Fence() {
		t.Fatalf("first waiter: %v", r1.err)
	}
	c.waitLock(t, name, "total_waiters", 1)
	select {
	case r := <-second:
		t.Fatalf("second waiter granted before the first unlocked: %v", r.err)
	case <-time.After(200 * time.Millisecond):
	}
	r1.h.Unlock()
	r2 := await(t, second, "second waiter")
	if r2.err != nil || r2.h.Fence() <= r1.h.Fence() {
		t.Fatalf("second waiter: %v", r2.err)
	}
	r2.h.Unlock()
}

func TestLockContextTimeout(t *testing.T) {
	c := plainCluster(t)
	a, b := connect(t, c, "holder"), connect(t, c, "waiter")
	name := lockName(t, "a")
	h, err := a.Lock(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = b.Lock(ctx, name)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrTimedOut) {
		t.Fatalf("Lock past its deadline: %v", err)
	}
	if time.Since(start) < 400*time.Millisecond {
		t.Fatalf("returned after %v", time.Since(start))
	}
	c.waitLock(t, name, "total_waiters", 0)
	// A Wait option shorter than no deadline: ErrTimedOut alone.
	_, err = b.Lock(context.Background(), name, Wait(200*time.Millisecond))
	if !errors.Is(err, ErrTimedOut) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock with Wait: %v", err)
	}
}

func TestLockContextCancel(t *testing.T) {
	c := plainCluster(t)
	a, b := connect(t, c, "holder"), connect(t, c, "waiter")
	name := lockName(t, "a")
	h, err := a.Lock(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch := lockAsync(ctx, b, name, Value([]byte("waiting")))
	c.waitLock(t, name, "total_waiters", 1)
	cancel()
	r := await(t, ch, "cancelled Lock")
	if !errors.Is(r.err, context.Canceled) || !errors.Is(r.err, ErrCanceled) {
		t.Fatalf("cancelled Lock: %v", r.err)
	}
	c.waitLock(t, name, "total_waiters", 0)
	// A context cancelled before the call: nothing is sent.
	if _, err := b.Lock(ctx, name); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock with a cancelled context: %v", err)
	}
	h.Unlock()
	// The holder's lock was passed to nobody: b's wait was withdrawn.
	c.waitLock(t, name, "total_holders", 0)
}

func TestCloseEndsWaitingLock(t *testing.T) {
	c := plainCluster(t)
	a := connect(t, c, "holder")
	b, err := Connect(context.Background(), Options{Endpoints: c.Endpoints})
	if err != nil {
		t.Fatal(err)
	}
	name := lockName(t, "a")
	h, err := a.Lock(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Unlock()
	ch := lockAsync(context.Background(), b, name)
	c.waitLock(t, name, "total_waiters", 1)
	closed := make(chan struct{})
	go func() { b.Close(); close(closed) }()
	b.Close()
	<-closed
	b.Close()
	if r := await(t, ch, "Lock during Close"); !errors.Is(r.err, ErrClosed) {
		t.Fatalf("Lock during Close: %v", r.err)
	}
	if _, err := b.Lock(context.Background(), name); !errors.Is(err, ErrClosed) {
		t.Fatalf("Lock after Close: %v", err)
	}
	c.waitLock(t, name, "total_waiters", 0)
}

func TestReenterManySharedLimit(t *testing.T) {
	c := plainCluster(t)
	cl := connect(t, c, "modes")
	ctx := context.Background()
	name := lockName(t, "r")
	h, err := cl.Lock(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	h2, err := h.Reenter(ctx)
	if err != nil || h2.Fence() != h.Fence() {
		t.Fatalf("Reenter: %v", err)
	}
	if n := c.lockNumber(t, name, "total_waiters"); n != 0 {
		t.Fatalf("Reenter queued: %d waiters", n)
	}
	// The same owner without Reentrant would wait behind itself.
	if _, err := cl.Lock(ctx, name, As(h.Owner())); !errors.Is(err, ErrDeadlock) {
		t.Fatalf("non-reentrant lock by the owner: %v", err)
	}
	h.Unlock()
	if _, err := cl.TryLock(ctx, name); !errors.Is(err, ErrWouldBlock) {
		t.Fatalf("released with a handle left: %v", err)
	}
	h2.Unlock()
	c.waitLock(t, name, "total_holders", 0)

	names := []string{lockName(t, "m1"), lockName(t, "m2")}
	m, err := cl.LockMany(ctx, names)
	if err != nil || m.Name() != names[0] {
		t.Fatalf("LockMany: %v", err)
	}
	if _, err := cl.TryLock(ctx, names[1]); !errors.Is(err, ErrWouldBlock) {
		t.Fatalf("second name of a multi-lock: %v", err)
	}
	m.Unlock()
	c.waitLock(t, names[1], "total_holders", 0)

	sh := lockName(t, "s")
	s1, err := cl.Lock(ctx, sh, Shared())
	if err != nil {
		t.Fatal(err)
	}
	s2, err := cl.TryLock(ctx, sh, Shared())
	if err != nil {
		t.Fatalf("second shared hold: %v", err)
	}
	if _, err := cl.TryLock(ctx, sh); !errors.Is(err, ErrWouldBlock) {
		t.Fatalf("exclusive beside shared holds: %v", err)
	}
	s1.Unlock()
	s2.Unlock()

	sem := lockName(t, "sem")
	var permits []*Hold
	for i := 0; i < 2; i++ {
		p, err := cl.TryLock(ctx, sem, Limit(2))
		if err != nil {
			t.Fatalf("permit %d: %v", i, err)
		}
		permits = append(permits, p)
	}
	if _, err := cl.TryLock(ctx, sem, Limit(2)); !errors.Is(err, ErrWouldBlock) {
		t.Fatalf("third permit of 2: %v", err)
	}
	if _, err := cl.TryLock(ctx, sem, Limit(3)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("another limit: %v", err)
	}
	for _, p := range permits {
		p.Unlock()
	}
}
