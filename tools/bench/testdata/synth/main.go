// Command synth writes N distinct synthetic capability entries as one JSON
// array, the format `groundgate registry put FILE` accepts, for the
// 100,000-capability figures of tools/bench/run.sh.
//
//	synth -n 100000 -terms terms.txt > entries.json
//
// The entries are made like discover's syntheticEntries (discover/
// bench_test.go): every one has its own expression, so its own identity,
// and realistic discovery text — two multi-word aliases, a one-word and a
// two-word tag, a description of a three-word head and 12–25 more words —
// drawn from an invented
// vocabulary, so the keyword tier's text index has as much text to hold as
// a real catalog of that size. Tags take their single words from a
// vocabulary of their own. The output is the same for the same -n: the generator is
// seeded.
//
// -terms writes two lines, "alias=PHRASE" (an alias of the first entry:
// the alias tier answers it) and "keyword=PHRASE" (two words of the first
// entry's description head: only the keyword tier answers it).
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
)

type entry struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	Sem  struct {
		Pure          bool   `json:"pure"`
		Deterministic bool   `json:"deterministic"`
		Commutative   bool   `json:"commutative"`
		Associative   bool   `json:"associative"`
		Idempotent    bool   `json:"idempotent"`
		Orientation   string `json:"orientation"`
		Stateful      bool   `json:"stateful"`
	} `json:"sem"`
	Alg  algebraic `json:"alg"`
	Impl struct {
		Engine  string `json:"engine"`
		IR      string `json:"ir"`
		Fusable bool   `json:"fusable"`
		Expr    string `json:"expr"`
	} `json:"impl"`
	Disc struct {
		Aliases     []string `json:"aliases"`
		Description string   `json:"description"`
		Tags        []string `json:"tags"`
	} `json:"disc"`
}

type algebraic struct {
	Inputs     []string `json:"inputs"`
	Outputs    []string `json:"outputs"`
	Arity      int      `json:"arity"`
	Reversible bool     `json:"reversible"`
}

func main() {
	n := flag.Int("n", 100_000, "entries to write")
	terms := flag.String("terms", "", "also write the alias and keyword test terms to this `file`")
	flag.Parse()
	if err := run(*n, *terms); err != nil {
		fmt.Fprintln(os.Stderr, "synth:", err)
		os.Exit(1)
	}
}

// word is the n-th invented word: consonant-vowel pairs and an "x", never
// an English word, so no real catalog entry's text matches it.
func word(n int) string {
	const letters = "bcdfghjklmnpqrstvwz"
	var b []byte
	for {
		b = append(b, letters[n%len(letters)], "aeiou"[n%5])
		n /= len(letters)
		if n == 0 {
			break
		}
	}
	return string(b) + "x"
}

func run(n int, termsFile string) error {
	if n <= 0 {
		return errors.New("-n must be positive")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	tagWords := make([]string, 500)
	for i := range tagWords {
		tagWords[i] = word(i + 1000)
	}
	textWords := make([]string, 5500)
	for i := range textWords {
		textWords[i] = word(i + 1500)
	}
	common := strings.Fields(`the of a and to in is by over with for on returns window signal
		rolling mean volatility price series column value log z-score weight position sized
		trailing annualised rows previous target leverage lag clip sum std sample spread front
		next contract long short rising falling average daily yearly risk return ratio curve`)
	pick := func() string {
		if rng.IntN(3) == 0 {
			return common[rng.IntN(len(common))]
		}
		return textWords[rng.IntN(len(textWords))]
	}
	phrase := func(k int) string {
		w := make([]string, k)
		for i := range w {
			w[i] = textWords[rng.IntN(len(textWords))]
		}
		return strings.Join(w, " ")
	}
	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	out.WriteString("[\n")
	var alias, keyword string
	for i := range n {
		var e entry
		e.Name = fmt.Sprintf("SYN_%06d", i)
		e.Sem.Pure, e.Sem.Deterministic, e.Sem.Orientation = true, true, "none"
		e.Alg = algebraic{Inputs: []string{"series"}, Outputs: []string{"series"}, Arity: 1}
		e.Impl.Engine, e.Impl.IR, e.Impl.Expr = "synthetic/v1", "elementwise", fmt.Sprintf("(syn%d x)", i)
		desc := make([]string, 12+rng.IntN(14))
		for j := range desc {
			desc[j] = pick()
		}
		lead := phrase(3)
		e.Disc.Aliases = []string{phrase(2), phrase(3)}
		e.Disc.Tags = []string{tagWords[rng.IntN(len(tagWords))], phrase(2)}
		e.Disc.Description = lead + ": " + strings.Join(desc, " ") + "."
		switch r := rng.IntN(100); {
		case r < 70:
			e.Kind = "operation"
		case r < 85:
			e.Kind = "signal"
		case r < 95:
			e.Kind = "recipe"
		case r < 98:
			e.Kind = "family"
			e.Sem.Orientation = "positive"
			e.Alg = algebraic{Inputs: []string{"frame"}, Outputs: []string{"pnl", "weights"}, Arity: 1}
			e.Impl.IR = "strategy"
			// Every family has a negated twin, as real catalogs pair
			// momentum with reversal.
			sig := fmt.Sprintf("(syn%d x)", i)
			if i%2 == 1 {
				sig = fmt.Sprintf("(neg (syn%d x))", i-1)
				e.Sem.Orientation = "negative"
			}
			e.Impl.Expr = "(volsize " + sig + " (dlog x) $risk_window $target_vol $leverage $lag)"
		default:
			e.Kind = "metric"
			e.Sem.Orientation = "maximize"
			e.Alg = algebraic{Inputs: []string{"pnl"}, Outputs: []string{"score"}, Arity: 1}
			e.Impl.IR = "reduce"
		}
		// Aliases must be distinct within an entry.
		if strings.EqualFold(e.Disc.Aliases[0], e.Disc.Aliases[1]) {
			e.Disc.Aliases = e.Disc.Aliases[:1]
		}
		if i == 0 {
			// Two words of a three-word description head: no equality
			// tier holds them (the head as a whole is a defining phrase),
			// so only the text index's phrase search finds them.
			w := strings.Fields(lead)
			alias, keyword = e.Disc.Aliases[0], w[0]+" "+w[1]
		}
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		out.Write(b)
		if i < n-1 {
			out.WriteString(",\n")
		}
	}
	out.WriteString("\n]\n")
	if err := out.Flush(); err != nil {
		return err
	}
	if termsFile != "" {
		return os.WriteFile(termsFile, []byte("alias="+alias+"\nkeyword="+keyword+"\n"), 0o644)
	}
	return nil
}
