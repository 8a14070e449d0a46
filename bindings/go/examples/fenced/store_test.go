package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStoreRejectsLowerFence(t *testing.T) {
	s := Store{t.TempDir()}
	for _, w := range []struct {
		fence uint64
		ok    bool
	}{{5, true}, {5, true}, {7, true}, {6, false}, {1, false}, {8, true}} {
		err := s.Write(w.fence, "x")
		if w.ok != (err == nil) || (!w.ok && !errors.Is(err, ErrStaleFence)) {
			t.Fatalf("write with fence %d: %v", w.fence, err)
		}
	}
	if h, err := s.Highest(); h != 8 || err != nil {
		t.Fatalf("highest %d %v", h, err)
	}
	log, _ := os.ReadFile(filepath.Join(s.dir, "log"))
	if got := strings.Fields(string(log)); strings.Join(got, " ") != "5 x 5 x 7 x 8 x" {
		t.Fatalf("log %q", log)
	}
}
