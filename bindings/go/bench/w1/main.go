// w1: lockbench's workload W1 (tests/bench/lockbench.c) through the Go
// binding: N goroutines, each with its own Client, lock and unlock their
// own name in a loop for S seconds. Prints ONE JSON line with the cycles
// and the acquire and release latencies, measured around Lock and Unlock.
//
//	w1 -endpoints E [-clients 1] [-seconds 10]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"baton"
)

type report struct {
	System   string  `json:"system"`
	Workload string  `json:"workload"`
	Clients  int     `json:"clients"`
	Seconds  int     `json:"seconds"`
	Ops      int     `json:"ops"`
	OpsPerS  float64 `json:"ops_per_s"`
	AcqP50   float64 `json:"acq_p50_us"`
	AcqP99   float64 `json:"acq_p99_us"`
	RelP50   float64 `json:"rel_p50_us"`
	RelP99   float64 `json:"rel_p99_us"`
	Errors   int     `json:"errors"`
}

// worker: one client's samples and errors.
type worker struct {
	acq, rel []time.Duration
	errors   int
}

func (w *worker) run(ctx context.Context, endpoints, name string, end time.Time) {
	cl, err := baton.Connect(ctx, baton.Options{Endpoints: endpoints, ClientName: "w1-go"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "w1:", err)
		w.errors++
		return
	}
	defer cl.Close()
	for time.Now().Before(end) {
		t0 := time.Now()
		h, err := cl.Lock(ctx, name)
		t1 := time.Now()
		if err != nil {
			fmt.Fprintln(os.Stderr, "w1: lock:", err)
			w.errors++
			continue
		}
		err = h.Unlock()
		t2 := time.Now()
		if err != nil {
			fmt.Fprintln(os.Stderr, "w1: unlock:", err)
			w.errors++
			continue
		}
		w.acq = append(w.acq, t1.Sub(t0))
		w.rel = append(w.rel, t2.Sub(t1))
	}
}

// pct is the p-th percentile of d (sorted), in µs.
func pct(d []time.Duration, p float64) float64 {
	if len(d) == 0 {
		return 0
	}
	i := int(p * float64(len(d)-1))
	return float64(d[i].Nanoseconds()) / 1000
}

func main() {
	endpoints := flag.String("endpoints", "", "cluster endpoints (required)")
	clients := flag.Int("clients", 1, "goroutines, each with its own client")
	seconds := flag.Int("seconds", 10, "run time")
	flag.Parse()
	if *endpoints == "" || *clients < 1 || *seconds < 1 {
		flag.Usage()
		os.Exit(2)
	}
	ctx := context.Background()
	workers := make([]worker, *clients)
	start := time.Now()
	end := start.Add(time.Duration(*seconds) * time.Second)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			workers[i].run(ctx, *endpoints, fmt.Sprintf("w1-go-%d-%d", os.Getpid(), i), end)
		}(i)
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	var acq, rel []time.Duration
	r := report{System: "go", Workload: "W1", Clients: *clients, Seconds: *seconds}
	for _, w := range workers {
		acq = append(acq, w.acq...)
		rel = append(rel, w.rel...)
		r.Errors += w.errors
	}
	sort.Slice(acq, func(i, j int) bool { return acq[i] < acq[j] })
	sort.Slice(rel, func(i, j int) bool { return rel[i] < rel[j] })
	r.Ops = len(acq)
	r.OpsPerS = float64(r.Ops) / elapsed
	r.AcqP50, r.AcqP99 = pct(acq, 0.50), pct(acq, 0.99)
	r.RelP50, r.RelP99 = pct(rel, 0.50), pct(rel, 0.99)
	line, _ := json.Marshal(r)
	fmt.Println(string(line))
	if r.Errors > 0 {
		os.Exit(1)
	}
}
