package discover

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// phraseModel is what a phraseTable must answer: key → tier → sorted
// entries.
type phraseModel map[string]map[tier][]uint32

func (m phraseModel) add(key string, tr tier, e uint32) {
	if m[key] == nil {
		m[key] = map[tier][]uint32{}
	}
	l := m[key][tr]
	if i, found := slices.BinarySearch(l, e); !found {
		m[key][tr] = slices.Insert(l, i, e)
	}
}

func (m phraseModel) remove(key string, tr tier, e uint32) {
	l := m[key][tr]
	if i, found := slices.BinarySearch(l, e); found {
		m[key][tr] = slices.Delete(l, i, i+1)
	}
}

func (m phraseModel) renumber(to []uint32) {
	for _, tiers := range m {
		for tr, l := range tiers {
			var out []uint32
			for _, e := range l {
				if to[e] != maxEntries {
					out = append(out, to[e])
				}
			}
			tiers[tr] = out
		}
	}
}

func (m phraseModel) check(t *testing.T, pt *phraseTable, keys []string, step string) {
	t.Helper()
	for _, key := range keys {
		listed := pt.listed(key)
		if !slices.IsSorted(listed) {
			t.Fatalf("%s: postings of %q not sorted: %v", step, key, listed)
		}
		any := false
		for tr := tierExact; tr <= tierDefined; tr++ {
			var got []uint32
			for _, v := range inTier(listed, tr) {
				got = append(got, v&entryMask)
			}
			want := m[key][tr]
			any = any || len(want) > 0
			if !slices.Equal(got, want) {
				t.Fatalf("%s: %q in tier %d: %v, want %v", step, key, tr, got, want)
			}
		}
		if pt.has(key) != any {
			t.Fatalf("%s: has(%q) = %v, want %v", step, key, pt.has(key), any)
		}
	}
}

// The phrase table answers like a map of sorted lists through a build,
// edits, renumberings (entries coming and going) and compactions.
func TestPhraseTableModel(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 99))
			keys := []string{"", "a", "a b", "b", "sharpe ratio", "x y z w v u t s r", "mom", "mom wzs"}
			for i := range 300 {
				keys = append(keys, fmt.Sprintf("k%d%s", i, strings.Repeat(" w", i%10)))
			}
			const entries = 400
			pt := newPhraseTable(8, 8, nil) // small: the table grows
			m := phraseModel{}
			for e := range uint32(entries) {
				for range rng.IntN(4) {
					key, tr := keys[rng.IntN(len(keys))], tier(rng.IntN(4))
					if !slices.Contains(m[key][tr], e) { // build takes a posting once
						pt.build([]byte(key), tr, e)
						m.add(key, tr, e)
					}
				}
			}
			pt.freeze()
			absent := append(slices.Clone(keys), "absent", "k1 w w")
			m.check(t, pt, absent, "build")
			n := entries
			for step := range 3000 {
				switch op := rng.IntN(100); {
				case op < 50:
					key, tr, e := keys[rng.IntN(len(keys))], tier(rng.IntN(4)), uint32(rng.IntN(n))
					pt.add(key, tr, e)
					m.add(key, tr, e)
				case op < 95:
					key, tr, e := keys[rng.IntN(len(keys))], tier(rng.IntN(4)), uint32(rng.IntN(n))
					if l := m[key][tr]; len(l) > 0 && rng.IntN(2) == 0 {
						e = l[rng.IntN(len(l))] // one that is there
					}
					pt.remove(key, tr, e)
					m.remove(key, tr, e)
				case op < 98: // entries come and go: order kept
					to := make([]uint32, n)
					next := uint32(0)
					for e := range to {
						if rng.IntN(10) == 0 { // an entry comes before this one
							next++
						}
						to[e] = next
						if rng.IntN(10) == 0 { // this one goes
							to[e] = maxEntries
						} else {
							next++
						}
					}
					pt.renumber(to)
					m.renumber(to)
					n = max(int(next), 1)
				default:
					pt.freeze()
				}
				if step%50 == 0 {
					m.check(t, pt, absent, fmt.Sprintf("step %d", step))
				}
			}
			m.check(t, pt, absent, "end")
			pt.freeze()
			m.check(t, pt, absent, "final freeze")
			if pt.maxLen != MaxPhraseWords {
				t.Errorf("maxLen %d, want %d (the longest key added has 9 words)", pt.maxLen, MaxPhraseWords)
			}
		})
	}
}
