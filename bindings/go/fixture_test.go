package baton

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// cluster is a real three-node cluster started by the project's C harness
// (tests/bindings/cluster_fixture.c, which documents its commands): free
// 127.0.0.1 ports, a fresh temp dir, every node stopped by pid, also when
// this process dies (the fixture stops the cluster when its stdin closes).
type cluster struct {
	Endpoints string `json:"endpoints"`
	Dir       string `json:"dir"`
	CA        string `json:"ca"`
	Cert      string `json:"cert"`
	Key       string `json:"key"`
	Token     string `json:"token"`
	ReadToken string `json:"read_token"`

	mu  sync.Mutex
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func repoRoot() string {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		panic(err)
	}
	return root
}

func buildDir() string {
	if b := os.Getenv("BATON_BUILD"); b != "" {
		abs, err := filepath.Abs(b)
		if err == nil {
			return abs
		}
		return b
	}
	return filepath.Join(repoRoot(), "build", "default")
}

func startCluster(secure bool) (*cluster, error) {
	args := []string{}
	if secure {
		args = append(args, "--secure")
	}
	cmd := exec.Command(filepath.Join(buildDir(), "tests", "bindings", "cluster_fixture"), args...)
	cmd.Dir = repoRoot()
	cmd.Env = append(os.Environ(), "BATON_BUILD="+buildDir())
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &cluster{cmd: cmd, in: in, out: bufio.NewReader(out)}
	line, err := c.out.ReadString('\n')
	if err != nil {
		in.Close()
		cmd.Wait()
		return nil, fmt.Errorf("cluster_fixture did not start a cluster: %v", err)
	}
	if err := json.Unmarshal([]byte(line), c); err != nil {
		in.Close()
		cmd.Wait()
		return nil, fmt.Errorf("cluster_fixture: %q: %v", line, err)
	}
	return c, nil
}

// do sends one command and returns its answer's result.
func (c *cluster) do(t testing.TB, line string) string {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		t.Fatalf("cluster_fixture %q: %v", line, err)
	}
	answer, err := c.out.ReadString('\n')
	answer = strings.TrimRight(answer, "\n")
	if err != nil || !strings.HasPrefix(answer, "ok") {
		t.Fatalf("cluster_fixture %q: %q %v", line, answer, err)
	}
	return strings.TrimPrefix(strings.TrimPrefix(answer, "ok"), " ")
}

func (c *cluster) leader(t testing.TB) int {
	n, err := strconv.Atoi(c.do(t, "leader"))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// ctl runs batonctl with args; its exit status and stdout.
func (c *cluster) ctl(t testing.TB, args ...string) (int, string) {
	r := c.do(t, "ctl "+strings.Join(args, " "))
	st, out, _ := strings.Cut(r, " ")
	n, err := strconv.Atoi(st)
	if err != nil {
		t.Fatalf("ctl %v: %q", args, r)
	}
	var s string
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("ctl %v: %q: %v", args, out, err)
	}
	return n, s
}

// lockNumber is the number under key in lock-info's JSON of name.
func (c *cluster) lockNumber(t testing.TB, name, key string) int64 {
	n, err := strconv.ParseInt(c.do(t, "lock "+name+" "+key), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// waitLock waits (15 s at most) until lock-info's key of name is n.
func (c *cluster) waitLock(t testing.TB, name, key string, n int) {
	t.Helper()
	c.do(t, fmt.Sprintf("wait %s %s %d", name, key, n))
}

func (c *cluster) stop() {
	c.in.Close()
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		c.cmd.Process.Kill()
		<-done
	}
}

// The clusters the tests share, started when first needed and stopped
// by TestMain.
var (
	shared   = map[bool]*cluster{}
	sharedMu sync.Mutex
)

// plainCluster is the shared plaintext cluster.
func plainCluster(t testing.TB) *cluster { return sharedCluster(t, false) }

// secureCluster is the shared cluster with TLS and tokens.
func secureCluster(t testing.TB) *cluster { return sharedCluster(t, true) }

func sharedCluster(t testing.TB, secure bool) *cluster {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if c := shared[secure]; c != nil {
		return c
	}
	c, err := startCluster(secure)
	if err != nil {
		t.Fatal(err)
	}
	shared[secure] = c
	return c
}

// ownCluster is a cluster for one test (one that kills nodes).
func ownCluster(t testing.TB) *cluster {
	t.Helper()
	c, err := startCluster(false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.stop)
	return c
}

func TestMain(m *testing.M) {
	if os.Getenv("BATON_GO_CHILD") != "" {
		os.Exit(childMain())
	}
	rc := m.Run()
	for _, c := range shared {
		c.stop()
	}
	os.Exit(rc)
}
