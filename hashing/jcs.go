package hashing

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// This file holds the RFC 8785 (JCS) primitives — number and string
// formatting, member order — and rawJCS, a canonicaliser of raw JSON text.
// rawJCS accepts and refuses exactly what github.com/gowebpki/jcs does and
// writes the same bytes (FuzzRawJCS and the RFC 8785 vectors check both);
// it exists because jcs builds a string per value and a []uint16 per key,
// and the server canonicalises or validates every request body it reads.

const hexDigits = "0123456789abcdef"

// maxJCSDepth is jcs's nesting limit: 10000 open arrays and objects pass,
// 10001 are refused.
const maxJCSDepth = 10000

var (
	errNotFinite = errors.New("NaN or infinite number")
	errSyntax    = errors.New("invalid JSON")
	errDupKey    = errors.New("duplicate key")
	errFoldKey   = errors.New("duplicate key differing only in case")
	errTooDeep   = errors.New("nesting too deep")
	errTooLarge  = errors.New("document too large for rawJCS")
)

// appendNumber appends f in ECMAScript's Number.prototype.toString form
// (RFC 8785 §3.2.2.3): shortest round-trip digits, -0 as 0, exponent form
// below 1e-6 and from 1e21 on, exponents without leading zeros.
func appendNumber(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, errNotFinite
	}
	if f == 0 {
		return append(b, '0'), nil
	}
	abs := math.Abs(f)
	// Integers below 2^53 are exact, so their shortest form is the integer.
	if abs < 1<<53 && f == math.Trunc(f) {
		return strconv.AppendInt(b, int64(f), 10), nil
	}
	if abs >= 1e-6 && abs < 1e21 {
		return strconv.AppendFloat(b, f, 'f', -1, 64), nil
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, 'e', -1, 64)
	// Go writes at least two exponent digits ("1e-07"); ES6 writes "1e-7".
	for i := len(b) - 1; i > start; i-- {
		if b[i] == 'e' {
			if b[i+2] == '0' {
				b = append(b[:i+2], b[i+3:]...)
			}
			break
		}
	}
	return b, nil
}

// appendInt64 appends n as JCS reads it: a double. Beyond ±2^53 that
// rounds (to nearest, ties to even), as jcs does when it parses the digits.
func appendInt64(b []byte, n int64) []byte {
	if -1<<53 <= n && n <= 1<<53 {
		return strconv.AppendInt(b, n, 10)
	}
	b, _ = appendNumber(b, float64(n))
	return b
}

func appendUint64(b []byte, n uint64) []byte {
	if n <= 1<<53 {
		return strconv.AppendUint(b, n, 10)
	}
	b, _ = appendNumber(b, float64(n))
	return b
}

// appendString appends s as a JCS string: '"', '\\' and the control
// characters escaped (\b \t \n \f \r by name, the others as \u00xx), all
// else literal. Invalid UTF-8 becomes U+FFFD byte by byte, as encoding/json
// writes it ("\ufffd") and jcs then reads it back.
func appendString[S ~string | ~[]byte](b []byte, s S) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\t':
				b = append(b, '\\', 't')
			case '\n':
				b = append(b, '\\', 'n')
			case '\f':
				b = append(b, '\\', 'f')
			case '\r':
				b = append(b, '\\', 'r')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		n := min(len(s)-i, utf8.UTFMax)
		r, size := utf8.DecodeRuneInString(string(s[i : i+n]))
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, "\uFFFD"...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// validUTF8 returns s with every byte that is not part of a valid UTF-8
// sequence replaced by U+FFFD: the text a JCS string of s decodes to.
func validUTF8[S ~string | ~[]byte](dst []byte, s S) []byte {
	for i := 0; i < len(s); {
		n := min(len(s)-i, utf8.UTFMax)
		r, size := utf8.DecodeRuneInString(string(s[i : i+n]))
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, "\uFFFD"...)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return dst
}

// compareUTF16 orders two valid UTF-8 strings by their UTF-16 code units,
// the member order RFC 8785 §3.2.3 pins. UTF-8 byte order is code point
// order, which differs from UTF-16 order only between U+E000–U+FFFF and
// the supplementary planes (whose surrogates sort below U+E000).
func compareUTF16[S, T ~string | ~[]byte](a S, b T) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return len(a) - len(b)
	}
	if a[i] < utf8.RuneSelf && b[i] < utf8.RuneSelf {
		return int(a[i]) - int(b[i])
	}
	// Back up to the start of the rune the strings differ in: the bytes
	// before i are equal, so it starts at the same offset in both.
	for i > 0 && a[i]&0xC0 == 0x80 {
		i--
	}
	ra, rb := runeAt(a, i), runeAt(b, i)
	if (ra >= 0x10000) != (rb >= 0x10000) {
		// One is a surrogate pair (first unit D800–DBFF), the other a BMP
		// character outside the surrogates: below D800 or from E000.
		if ra >= 0x10000 {
			if rb < 0xD800 {
				return 1
			}
			return -1
		}
		if ra < 0xD800 {
			return -1
		}
		return 1
	}
	return int(ra) - int(rb)
}

// runeAt decodes the rune of valid UTF-8 starting at s[i].
func runeAt[S ~string | ~[]byte](s S, i int) rune {
	c := s[i]
	switch {
	case c < 0x80:
		return rune(c)
	case c < 0xE0:
		return rune(c&0x1F)<<6 | rune(s[i+1]&0x3F)
	case c < 0xF0:
		return rune(c&0x0F)<<12 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F)
	default:
		return rune(c&0x07)<<18 | rune(s[i+1]&0x3F)<<12 | rune(s[i+2]&0x3F)<<6 | rune(s[i+3]&0x3F)
	}
}

// validNumber reports whether s is a JSON number (RFC 8259 §6).
func validNumber[S ~string | ~[]byte](s S) bool {
	i, n := 0, len(s)
	if i < n && s[i] == '-' {
		i++
	}
	switch {
	case i < n && s[i] == '0':
		i++
	case i < n && '1' <= s[i] && s[i] <= '9':
		for i++; i < n && '0' <= s[i] && s[i] <= '9'; i++ {
		}
	default:
		return false
	}
	if i < n && s[i] == '.' {
		i++
		if i == n || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i++; i < n && '0' <= s[i] && s[i] <= '9'; i++ {
		}
	}
	if i < n && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < n && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i == n || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i++; i < n && '0' <= s[i] && s[i] <= '9'; i++ {
		}
	}
	return i == n
}

// appendNumberText appends the canonical form of a JSON number token,
// refusing what is not a number or is outside the double range (jcs's
// rules). Short integers are already canonical and skip the float round
// trip.
func appendNumberText[S ~string | ~[]byte](b []byte, tok S) ([]byte, error) {
	if !validNumber(tok) {
		return b, errSyntax
	}
	digits := len(tok)
	if tok[0] == '-' {
		digits--
	}
	if digits <= 15 && isDigits(tok) {
		if len(tok) == 2 && tok[0] == '-' && tok[1] == '0' {
			return append(b, '0'), nil
		}
		return append(b, tok...), nil
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		return b, errSyntax
	}
	return appendNumber(b, f)
}

// isDigits reports whether tok is an optional '-' and decimal digits only.
func isDigits[S ~string | ~[]byte](tok S) bool {
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; (c < '0' || c > '9') && !(i == 0 && c == '-') {
			return false
		}
	}
	return true
}

// Raw JSON is parsed into a flat tape of nodes, then written once: objects
// need their members sorted, and sorting indices on a tape (rather than
// re-copying each object's canonical bytes into order, level by level)
// keeps the work O(n log n) however deep the nesting — the amplification
// jcs itself was fixed for.
const (
	rawNull uint8 = iota
	rawTrue
	rawFalse
	rawNumber // text: canonical number
	rawString // text: decoded UTF-8
	rawArray
	rawObject // members: order[start:end], key node indices in JCS order
)

type rawNode struct {
	kind       uint8
	start, end int // text span in rawJCS.text, or member span in rawJCS.order
	next       int // index of the node after this one's subtree
}

// rawJCS is a reusable canonicaliser of raw JSON. The zero value is ready.
type rawJCS struct {
	src   []byte
	pos   int
	depth int
	// check skips what only writing needs (number formatting).
	check bool
	// strict also refuses keys of one object that differ only in case,
	// which jcs accepts (DecodeStrict's rule, not RFC 8785's).
	strict bool
	// dup is the key behind errDupKey or errFoldKey; other is the key it
	// repeats (the same for an exact duplicate).
	dup, other string
	nodes      []rawNode
	text       []byte
	order      []int
	stack      []int
}

// maxRawInput bounds what rawJCS takes on; larger documents (none the
// server accepts) go to jcs as before.
const maxRawInput = 1 << 28

// canonical appends the RFC 8785 form of src to b. depth is how many
// arrays and objects enclose src in the document it is part of.
func (p *rawJCS) canonical(b, src []byte, depth int) ([]byte, error) {
	if err := p.parse(src, depth, false); err != nil {
		return b, err
	}
	return p.emit(b, 0), nil
}

// validate checks src as canonical would, without writing anything.
func (p *rawJCS) validate(src []byte) error {
	return p.parse(src, 0, true)
}

func (p *rawJCS) parse(src []byte, depth int, check bool) error {
	if len(src) > maxRawInput {
		return errTooLarge
	}
	p.src, p.pos, p.depth, p.check = src, 0, depth, check
	if p.nodes == nil {
		// Sized for typical JSON (a value every 8 bytes or so), so that
		// one document costs a few allocations, not a growth series.
		p.nodes = make([]rawNode, 0, len(src)/8+4)
		p.text = make([]byte, 0, len(src))
		p.order = make([]int, 0, len(src)/16+4)
		p.stack = make([]int, 0, len(src)/16+4)
	}
	p.nodes, p.text, p.order, p.stack = p.nodes[:0], p.text[:0], p.order[:0], p.stack[:0]
	if err := p.element(); err != nil {
		return err
	}
	for ; p.pos < len(src); p.pos++ {
		if !isSpace(src[p.pos]) {
			return errSyntax
		}
	}
	return nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

// peek skips whitespace and returns the next byte, unconsumed.
func (p *rawJCS) peek() (byte, error) {
	for ; p.pos < len(p.src); p.pos++ {
		if c := p.src[p.pos]; !isSpace(c) {
			if c >= utf8.RuneSelf {
				return 0, errSyntax
			}
			return c, nil
		}
	}
	return 0, errSyntax
}

func (p *rawJCS) element() error {
	c, err := p.peek()
	if err != nil {
		return err
	}
	switch c {
	case '{':
		p.pos++
		return p.object()
	case '[':
		p.pos++
		return p.array()
	case '"':
		p.pos++
		start := len(p.text)
		if err := p.str(); err != nil {
			return err
		}
		p.nodes = append(p.nodes, rawNode{kind: rawString, start: start, end: len(p.text), next: len(p.nodes) + 1})
		return nil
	}
	return p.token()
}

// token reads a literal or a number. Like jcs, it runs to the next ',',
// ']', '}', whitespace or end of input, so "1 2" or "tr ue" never merge.
func (p *rawJCS) token() error {
	start := p.pos
	for ; p.pos < len(p.src); p.pos++ {
		c := p.src[p.pos]
		if c >= utf8.RuneSelf {
			return errSyntax
		}
		if c == ',' || c == ']' || c == '}' || isSpace(c) {
			break
		}
	}
	tok := p.src[start:p.pos]
	n := rawNode{next: len(p.nodes) + 1}
	switch string(tok) {
	case "null":
		n.kind = rawNull
	case "true":
		n.kind = rawTrue
	case "false":
		n.kind = rawFalse
	default:
		n.kind, n.start = rawNumber, len(p.text)
		if p.check {
			if !validNumber(tok) {
				return errSyntax
			}
			if _, err := strconv.ParseFloat(string(tok), 64); err != nil {
				return errSyntax
			}
		} else {
			var err error
			if p.text, err = appendNumberText(p.text, tok); err != nil {
				return err
			}
		}
		n.end = len(p.text)
	}
	p.nodes = append(p.nodes, n)
	return nil
}

// str decodes a string body (after its opening quote) into p.text,
// refusing raw control characters, unknown escapes, unpaired surrogate
// escapes and invalid UTF-8, as jcs does.
func (p *rawJCS) str() error {
	src := p.src
	for {
		start := p.pos
		for p.pos < len(src) {
			c := src[p.pos]
			if c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
				break
			}
			p.pos++
		}
		p.text = append(p.text, src[start:p.pos]...)
		if p.pos >= len(src) {
			return errSyntax
		}
		c := src[p.pos]
		p.pos++
		switch {
		case c == '"':
			return nil
		case c < 0x20:
			return errSyntax
		case c == '\\':
			if p.pos >= len(src) {
				return errSyntax
			}
			e := src[p.pos]
			p.pos++
			switch e {
			case '"', '\\', '/':
				p.text = append(p.text, e)
			case 'b':
				p.text = append(p.text, '\b')
			case 'f':
				p.text = append(p.text, '\f')
			case 'n':
				p.text = append(p.text, '\n')
			case 'r':
				p.text = append(p.text, '\r')
			case 't':
				p.text = append(p.text, '\t')
			case 'u':
				r, ok := p.hex4()
				if !ok {
					return errSyntax
				}
				if utf16.IsSurrogate(r) {
					if r > 0xDBFF || p.pos+2 > len(src) || src[p.pos] != '\\' || src[p.pos+1] != 'u' {
						return errSyntax
					}
					p.pos += 2
					lo, ok := p.hex4()
					if !ok || lo < 0xDC00 || lo > 0xDFFF {
						return errSyntax
					}
					r = utf16.DecodeRune(r, lo)
				}
				p.text = utf8.AppendRune(p.text, r)
			default:
				return errSyntax
			}
		default: // c >= 0x80: a multi-byte sequence, which must be valid
			p.pos--
			r, size := utf8.DecodeRune(src[p.pos:])
			if r == utf8.RuneError && size <= 1 {
				return errSyntax
			}
			p.text = append(p.text, src[p.pos:p.pos+size]...)
			p.pos += size
		}
	}
}

func (p *rawJCS) hex4() (rune, bool) {
	if p.pos+4 > len(p.src) {
		return 0, false
	}
	var r rune
	for _, c := range p.src[p.pos : p.pos+4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	p.pos += 4
	return r, true
}

func (p *rawJCS) array() error {
	if p.depth++; p.depth > maxJCSDepth {
		return errTooDeep
	}
	idx := len(p.nodes)
	p.nodes = append(p.nodes, rawNode{kind: rawArray})
	for first := true; ; first = false {
		c, err := p.peek()
		if err != nil {
			return err
		}
		if c == ']' {
			p.pos++
			break
		}
		if !first {
			if c != ',' {
				return errSyntax
			}
			p.pos++
		}
		if err := p.element(); err != nil {
			return err
		}
	}
	p.nodes[idx].next = len(p.nodes)
	p.depth--
	return nil
}

func (p *rawJCS) object() error {
	if p.depth++; p.depth > maxJCSDepth {
		return errTooDeep
	}
	idx := len(p.nodes)
	p.nodes = append(p.nodes, rawNode{kind: rawObject})
	base := len(p.stack)
	for first := true; ; first = false {
		c, err := p.peek()
		if err != nil {
			return err
		}
		if c == '}' {
			p.pos++
			break
		}
		if !first {
			if c != ',' {
				return errSyntax
			}
			p.pos++
			if c, err = p.peek(); err != nil {
				return err
			}
		}
		if c != '"' {
			return errSyntax
		}
		p.pos++
		key := len(p.nodes)
		start := len(p.text)
		if err := p.str(); err != nil {
			return err
		}
		p.nodes = append(p.nodes, rawNode{kind: rawString, start: start, end: len(p.text), next: key + 1})
		if c, err = p.peek(); err != nil {
			return err
		}
		if c != ':' {
			return errSyntax
		}
		p.pos++
		if err := p.element(); err != nil {
			return err
		}
		p.stack = append(p.stack, key)
	}
	members := p.stack[base:]
	slices.SortFunc(members, func(a, b int) int {
		return compareUTF16(p.keyText(a), p.keyText(b))
	})
	for i := 1; i < len(members); i++ {
		if string(p.keyText(members[i-1])) == string(p.keyText(members[i])) {
			p.dup = string(p.keyText(members[i]))
			p.other = p.dup
			return errDupKey
		}
	}
	if p.strict && len(members) > 1 {
		if err := p.foldDuplicates(members); err != nil {
			return err
		}
	}
	n := &p.nodes[idx]
	n.start = len(p.order)
	p.order = append(p.order, members...)
	n.end, n.next = len(p.order), len(p.nodes)
	p.stack = p.stack[:base]
	p.depth--
	return nil
}

// foldDuplicates refuses two keys of one object that are equal under
// Unicode simple case folding ("prompt" and "Prompt"): a reader that
// matches names case-insensitively would take one for the other. Objects
// whose keys are all ASCII without capitals, nearly every one, need no
// folding: exact duplicates were refused already.
func (p *rawJCS) foldDuplicates(members []int) error {
	plain := true
	for _, m := range members {
		for _, c := range p.keyText(m) {
			if c >= utf8.RuneSelf || ('A' <= c && c <= 'Z') {
				plain = false
				break
			}
		}
		if !plain {
			break
		}
	}
	if plain {
		return nil
	}
	// Members are in RFC 8785 order, so the first of two variants met is
	// reported as the one repeated, the same for any input order.
	seen := make(map[string]string, len(members))
	for _, m := range members {
		k := string(p.keyText(m))
		f := foldKey(k)
		if prev, ok := seen[f]; ok {
			p.dup, p.other = k, prev
			return errFoldKey
		}
		seen[f] = k
	}
	return nil
}

// foldKey maps s to one representative of its case-folding class: each
// rune becomes the smallest rune of its unicode.SimpleFold orbit, so two
// strings strings.EqualFold calls equal fold to the same key.
func foldKey(s string) string {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		b = utf8.AppendRune(b, m)
	}
	return string(b)
}

func (p *rawJCS) keyText(i int) []byte {
	n := &p.nodes[i]
	return p.text[n.start:n.end]
}

// emit writes node i and its subtree.
func (p *rawJCS) emit(b []byte, i int) []byte {
	n := p.nodes[i]
	switch n.kind {
	case rawNull:
		return append(b, "null"...)
	case rawTrue:
		return append(b, "true"...)
	case rawFalse:
		return append(b, "false"...)
	case rawNumber:
		return append(b, p.text[n.start:n.end]...)
	case rawString:
		return appendString(b, p.text[n.start:n.end])
	case rawArray:
		b = append(b, '[')
		for j := i + 1; j < n.next; j = p.nodes[j].next {
			if j > i+1 {
				b = append(b, ',')
			}
			b = p.emit(b, j)
		}
		return append(b, ']')
	default: // rawObject
		b = append(b, '{')
		for k, key := range p.order[n.start:n.end] {
			if k > 0 {
				b = append(b, ',')
			}
			b = appendString(b, p.keyText(key))
			b = append(b, ':')
			b = p.emit(b, key+1)
		}
		return append(b, '}')
	}
}
