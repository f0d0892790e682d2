package session

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/groundgate/groundgate/hashing"
)

func TestHold(t *testing.T) {
	s := &Store{}
	a, b := hashing.SumSHA256([]byte("a")), hashing.SumSHA256([]byte("b"))
	ctx := context.Background()
	relA, err := s.Hold(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	// Another session is not held.
	relB, err := s.Hold(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	relB()
	// The same session waits, and gives up with its context.
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := s.Hold(short, a); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second Hold: %v", err)
	}
	// Holders take turns: no two inside at once.
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		inside int
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rel, err := s.Hold(ctx, a)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			inside++
			if inside != 1 {
				t.Errorf("%d holders at once", inside)
			}
			mu.Unlock()
			time.Sleep(time.Millisecond)
			mu.Lock()
			inside--
			mu.Unlock()
			rel()
			rel() // a second release does nothing
		}()
	}
	relA()
	wg.Wait()
	if len(s.holds.m) != 0 {
		t.Fatalf("%d holds left", len(s.holds.m))
	}
}
