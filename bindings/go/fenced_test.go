package baton

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestFencedExample builds examples/fenced and runs two of them on one
// election and one store; an operator's forced release takes the first
// leader's hold away: it must stop writing, the other leads
// with a higher fence, and the store's log never goes back in fence.
func TestFencedExample(t *testing.T) {
	c := plainCluster(t)
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "fenced")
	if out, err := exec.Command("go", "build", "-o", bin, "./examples/fenced").CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/fenced: %v\n%s", err, out)
	}
	store := filepath.Join(tmp, "store")
	os.Mkdir(store, 0o755)
	election := lockName(t, "e")
	type run struct {
		cmd   *exec.Cmd
		lines chan string
	}
	start := func(id string) run {
		cmd := exec.Command(bin, "-endpoints", c.Endpoints, "-store", store, "-election", election,
			"-id", id, "-seconds", "8")
		out, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r := run{cmd, make(chan string, 10000)}
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				r.lines <- sc.Text()
			}
			close(r.lines)
		}()
		return r
	}
	// expect skips to the next line that starts with one of prefixes.
	expect := func(r run, prefixes ...string) string {
		t.Helper()
		deadline := time.After(20 * time.Second)
		for {
			select {
			case l, ok := <-r.lines:
				if !ok {
					t.Fatalf("ended before %q", prefixes)
				}
				for _, p := range prefixes {
					if strings.HasPrefix(l, p) {
						return l
					}
				}
			case <-deadline:
				t.Fatalf("no %q in 20 s", prefixes)
			}
		}
	}
	a := start("a")
	la := expect(a, "leader a fence ")
	fenceA, _ := strconv.ParseUint(strings.TrimPrefix(la, "leader a fence "), 10, 64)
	expect(a, "wrote a fence")
	b := start("b")
	c.waitLock(t, election, "total_waiters", 1)
	if st, out := c.ctl(t, "release", "--force", election, "--now"); st != 0 {
		t.Fatalf("release --force: %d %s", st, out)
	}
	// a stops writing: told by Lost, or, should b write before the
	// notice reaches a, by the store's refusal of a's lower fence.
	fa := strconv.FormatUint(fenceA, 10)
	expect(a, "lost a fence "+fa+": ", "rejected a fence "+fa+": ")
	lb := expect(b, "leader b fence ")
	fenceB, _ := strconv.ParseUint(strings.TrimPrefix(lb, "leader b fence "), 10, 64)
	if fenceB <= fenceA {
		t.Fatalf("b's fence %d after a's %d", fenceB, fenceA)
	}
	expect(b, "wrote b fence")
	expect(a, "done a")
	expect(b, "done b")
	a.cmd.Wait()
	b.cmd.Wait()

	log, err := os.ReadFile(filepath.Join(store, "log"))
	if err != nil {
		t.Fatal(err)
	}
	var last uint64
	seen := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(log)), "\n") {
		f := strings.Fields(l)
		fence, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil || fence < last {
			t.Fatalf("log line %q after fence %d", l, last)
		}
		last = fence
		seen[f[1]] = true
	}
	if !seen["a"] || !seen["b"] {
		t.Fatalf("writers in the log: %v", seen)
	}
}
