package app_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/attest"
	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing/hashingtest"
	"github.com/groundgate/groundgate/policy"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/server"
)

// spellingDecoder is one of the project's decoders of untrusted JSON, with
// a document it accepts; decode returns its refusal's text ("" when it
// accepts).
type spellingDecoder struct {
	name   string
	doc    string
	decode func(t testing.TB, b []byte) string
	// maps lists the keys whose objects are maps (free names), where a
	// member in another case is another name, not a misspelling.
	maps []string
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

const spellingEntry = `{"name":"ODD_1","kind":"signal",
 "sem":{"pure":true,"deterministic":true,"commutative":false,"associative":false,"idempotent":false,"orientation":"none","stateful":true},
 "alg":{"inputs":["series"],"outputs":["series"],"arity":1,"reversible":false},
 "impl":{"engine":"groundgate/v1","ir":"pipeline","fusable":false,"expr":"(rmean (abs (dlog x)) 9)"},
 "disc":{"description":"Nine-day mean absolute log move.","aliases":["nine day chop"]}}`

const spellingPolicy = `{"smtlib":"(declare-const leverage Real)\n(declare-const allow Bool)\n(assert (! (= allow (<= leverage 2.0)) :named cap))","bind":{"leverage":"/params/leverage"},"allow":"allow","applies_to":["family"]}`

// decodeRequest is ground.DecodeRequest's failures as one text.
func decodeRequest(_ testing.TB, b []byte) string {
	_, fails := ground.DecodeRequest(b)
	var s []string
	for _, f := range fails {
		s = append(s, f.Field+": "+f.Detail)
	}
	return strings.Join(s, "; ")
}

// spellingDecoders are the decoders of files the CLI reads and of bodies
// and tool arguments (server.DecodeObject, which MCP shares with REST).
func spellingDecoders() []spellingDecoder {
	return []spellingDecoder{
		{name: "registry.DecodeEntry", doc: spellingEntry, decode: func(_ testing.TB, b []byte) string {
			_, err := registry.DecodeEntry(b, "entry")
			return errText(err)
		}},
		{name: "registry.DecodeEntries", doc: "[" + spellingEntry + "]", decode: func(_ testing.TB, b []byte) string {
			_, err := registry.DecodeEntries(b, "file")
			return errText(err)
		}},
		{name: "registry.DecodeDiscPatch", doc: `{"patch":"disc","registry":"sha256:` + strings.Repeat("0", 64) + `","version":1,"changes":[{"name":"SRP","identity":"sha256:` + strings.Repeat("1", 64) + `","add_aliases":["sharpe"],"because":["x"]}]}`,
			decode: func(_ testing.TB, b []byte) string {
				_, err := registry.DecodeDiscPatch(b, "patch")
				return errText(err)
			}},
		{name: "policy.ParseFile (one)", doc: spellingPolicy, maps: []string{"bind"}, decode: func(_ testing.TB, b []byte) string {
			_, err := policy.ParseFile("cap.json", b)
			return errText(err)
		}},
		{name: "policy.ParseFile (set)", doc: `{"cap":` + spellingPolicy + `}`, maps: []string{"", "bind"}, decode: func(_ testing.TB, b []byte) string {
			_, err := policy.ParseFile("set.json", b)
			return errText(err)
		}},
		{name: "ground.DecodeRequest", doc: `{"family":"MOM_WZS","metric":"SRP","params":{"window":[25,50]},"data":"oil-spot/wti-daily.csv"}`, maps: []string{"params"},
			decode: decodeRequest},
		{name: "ground.DecodeRequest (pipeline)", doc: `{"pipeline":[{"id":"s","capability":"MOM_WZS","params":{"window":20},"inputs":["data"]}],"output":"s","metric":"SRP","data":"d.csv"}`, maps: []string{"params"},
			decode: decodeRequest},
		{name: "contract.Decode", doc: `{"pre":[{"name":"a","expr":"true","message":"m"}],"post":[]}`, decode: func(_ testing.TB, b []byte) string {
			_, _, err := contract.Decode(b, "family", nil)
			return errText(err)
		}},
		{name: "attest.Verify", doc: `{"payloadType":"application/vnd.in-toto+json","payload":"e30=","signatures":[{"keyid":"k","sig":"c2ln"}]}`,
			decode: func(_ testing.TB, b []byte) string {
				_, err := attest.Verify(b)
				return errText(err)
			}},
		{name: "server.DecodeObject (discover, MCP arguments)", doc: `{"prompt":"momentum","terms":["sharpe ratio"]}`, decode: func(_ testing.TB, b []byte) string {
			var q discover.Query
			return errText(server.DecodeObject(b, &q))
		}},
	}
}

// inMap reports whether the mutated key's object is one of d's maps: the
// document's own object when maps holds "", else an object under one of
// the named members.
func (d spellingDecoder) inMap(doc []byte, key string, top bool) bool {
	for _, m := range d.maps {
		if m == "" && top {
			return true
		}
		if m != "" && strings.Contains(string(doc), fmt.Sprintf("%q:{", m)) && !top {
			return true
		}
	}
	return false
}

// Every decoder refuses every key given twice, exactly or in two letter
// cases, naming it; and a key of a struct given in the other case alone.
func TestKeySpellingsEveryDecoder(t *testing.T) {
	for _, d := range spellingDecoders() {
		t.Run(d.name, func(t *testing.T) {
			if msg := d.decode(t, []byte(d.doc)); strings.Contains(msg, "malformed") || strings.Contains(msg, "unknown field") || strings.Contains(msg, "uplicate key") {
				t.Fatalf("the seed document is refused as malformed: %s", msg)
			}
			n := 0
			for _, m := range hashingtest.KeyMutations([]byte(d.doc)) {
				if m.Kind == "case" && (d.inMap([]byte(d.doc), m.Key, m.Top) || !m.Top) {
					continue
				}
				n++
				msg := d.decode(t, m.Doc)
				if !strings.Contains(msg, fmt.Sprintf("%q", m.Key)) {
					t.Errorf("%s %q: %q does not name the key\n%s", m.Kind, m.Key, msg, m.Doc)
				}
			}
			if n == 0 {
				t.Fatal("no mutations")
			}
		})
	}
}

// FuzzKeySpellings adds a key and its other-case spelling (or the key
// twice) to any object of any decoder's document: every decoder refuses.
func FuzzKeySpellings(f *testing.F) {
	for i := range spellingDecoders() {
		f.Add(uint8(i), uint16(0), "prompt")
		f.Add(uint8(i), uint16(1), "Name")
		f.Add(uint8(i), uint16(2), "k\u212a") // KELVIN SIGN folds to k
		f.Add(uint8(i), uint16(3), "")
	}
	decoders := spellingDecoders()
	f.Fuzz(func(t *testing.T, which uint8, obj uint16, key string) {
		d := decoders[int(which)%len(decoders)]
		if !json.Valid([]byte(fmt.Sprintf("%q", key))) || strings.ToValidUTF8(key, "") != key {
			return
		}
		other := hashingtest.OtherCase(key)
		if other == "" {
			other = key
		}
		doc, ok := hashingtest.WithPair([]byte(d.doc), int(obj), key, other)
		if !ok {
			return
		}
		if msg := d.decode(t, doc); msg == "" {
			t.Errorf("%s accepted %s", d.name, doc)
		}
	})
}
