// Package relevance is the relevance scorer of SPEC §16 (issue 27): given
// documents, one per registry entry (name, title, description, parameter
// names and descriptions, aliases, tags, examples), and a prompt, it
// returns a small ranked set of matches with a deterministic integer
// score and a quantised confidence below 0.5, or nothing. Package
// discover's relevance tier (relevance_tier.go) reads it.
//
//	v := relevance.NewVectors(table)           // once: table from wordvec.Load
//	x, _ := relevance.New(v, relevance.DefaultConfig())
//	x.Add(relevance.Document{Name: "cancel_reservation", Description: "Cancel the whole reservation."})
//	r := x.Query("I want to cancel my reservation")
//	// r.Matches[0].Name == "cancel_reservation"; r.Scoring, r.Vectors: the digests to cite
//
// # Score
//
// Text is analysed by discover's chain (NFKC, UAX #29 words, possessive,
// lower case, plural stemmer) with tool names split into words in front
// and a stop list behind (analyze.go). Each distinct prompt word t gets a
// weight w_t = IDF(t)·rarity(t): BM25's IDF ln((2N+2)/(2n_t+1)) and the
// word's general-English rarity, ln(rank+2)/ln(40,001) from its rank in
// the word-vector table, at least Config.RarityFloorMicro (1 for a word
// the table lacks). Two adjacent words of a name, title, alias or tag are
// also indexed as a pair key "a b", and so are the prompt's adjacent
// content words; a pair that some document holds is a prompt word too,
// its weight Config.PairMilli/1000 (0.3) of its IDF ("page speed" is
// more than "page" and "speed" apart). A document d's score is
//
//	S(d) = Σ_t w_t · max(sat(t, d), soft(t, d), sib(t, d)) / Σ_t w_t
//
// the weighted share of the prompt the document covers, 0…1 in millionths.
// sat is BM25F's saturation t̃/(k1 + t̃) of the field-weighted,
// length-normalised frequency t̃ = Σ_f W_f·tf_f/((1−b_f) + b_f·len_f/avg_f);
// soft is SoftGain·(c − Floor)/(1 − Floor) for c the best word-vector
// cosine of t to another word of d; sib is λ_g·max_e sat(t, e) over the
// documents e of d's Document.Group g (the first 64 by name; no group, no
// sib), λ_g = Config.GroupMilli/1000 (0.3)·(N − |g|)/N. The tools of one
// upstream are siblings: a request that names the service and one of its
// operations lifts the service's other operations too (a registry tool
// entry's group is its impl.upstream), while a group that is the whole
// registry lends nothing. soft and sib are computed for
// the Config.Candidates documents with the best lexical score only.
//
// Every quantity is an integer with an explicit scale: logarithms are
// computed bit by bit in integers (lnMicro), cosines from exact int8 dot
// products and an integer square root, so no float arithmetic (and so no
// FMA fusion) reaches a score; GOARCH and GOAMD64 give the same numbers,
// which testdata/golden.txt pins.
//
// # Decision rule
//
// A request asks for one or a few things, however long it is: the score a
// match reports is its weighted credit Σ_t w_t·max(sat, soft, sib) over
// the weights of the prompt's Config.CoverWords (4) heaviest words rather
// than all of them (capped at 1), so a paragraph-long instruction is not
// diluted below the threshold. The candidates are ranked by credit (ties
// by name), then diversified: after the best, each next place goes to the
// candidate with the largest (1 − μ)·credit + μ·gain, gain being the
// credit it adds over the places before it (per word, the excess of its
// value over theirs), μ = Config.DiverseMilli/1000 (0.2), so a request
// for two things gets both in front rather than five ways to do one.
// Nothing matches unless the best stands out of the candidates'
// distribution: its credit is at least Config.GateMilli/1000 (2.1) times
// the Config.GateRank-th (30th, 0-based: the 31st) best credit (0 when
// there are fewer candidates), which is what lets a request no document
// serves match nothing in a large registry; and its score is at least
// Config.ThresholdMicro (0.145), which is what makes it match nothing in a
// small one (a request arrives with the tools of a few upstreams: the
// gate's rank is not reached there, and a request for something else
// covers at most a few of its words by chance). Then, in diversified
// order, a document matches when its score is at least
// Config.FloorMicro (0.1: the second thing a request asks for scores
// lower than the first) and Config.MarginMilli/1000 (0.4) of the best,
// up to ⌈n/Config.WordsPerMatch⌉ matches (5) for n the prompt's distinct
// content words, at least Config.MinMatches (3) and at most
// Config.MaxMatches (5): a request of a sentence or two asks for one or
// two things, a paragraph may ask for several; a later match must also
// add at least Config.GainMicro of coverage over the earlier ones (0:
// off). A match's confidence is ⌊499·S/10⁶⌋ thousandths: below 0.5, the
// keyword tier's.
//
// # Index
//
// An Index is built from documents one at a time: Add (a new or changed
// document, found by the next query), Remove. Iteration that reaches a
// result is in sorted order or order-free (integer sums), so an index
// built at once, from shuffled documents or incrementally gives the same
// bytes. Index.Digest covers the documents; Index.Scoring (cited by every
// Result) covers Version, the constants and the vector table's digest.
// Memory is bounded by Config.MaxFieldWords words a field and
// Config.MaxVecWords vector words a document. A group's members are kept
// sorted by name, and a query reads a group's best saturations by lookup
// only, so groups add no order dependence either.
package relevance
