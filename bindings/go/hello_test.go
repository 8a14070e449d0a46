package baton

import (
	"os/exec"
	"regexp"
	"testing"
)

// TestHelloExample runs examples/hello, the README's Go example, against
// a real cluster: it must take the lock, print its fence, and release it.
func TestHelloExample(t *testing.T) {
	c := plainCluster(t)
	name := lockName(t, "hello")
	out, err := exec.Command("go", "run", "./examples/hello", "-endpoints", c.Endpoints,
		"-name", name).CombinedOutput()
	if err != nil {
		t.Fatalf("go run ./examples/hello: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`holding \S+ with fence [1-9][0-9]*\n`).Match(out) {
		t.Fatalf("unexpected output: %q", out)
	}
	if n := c.lockNumber(t, name, "total_holders"); n != 0 {
		t.Fatalf("%s still has %d holders after the example ended", name, n)
	}
}
