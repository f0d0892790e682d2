package server

import (
	"reflect"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/discover"
)

// checkPlainBody: where a fast path decodes a body, decodeStrictBody
// decodes the same value from it, without an error. It reports whether
// the fast path took the body.
func checkPlainBody(t *testing.T, body []byte) bool {
	t.Helper()
	took := false
	if q, ok := plainQuery(body); ok {
		took = true
		var strict discover.Query
		if err := decodeStrictBody(body, &strict, ""); err != nil || !reflect.DeepEqual(q, strict) {
			t.Errorf("%s:\nplain  %#v\nstrict %#v %v", body, q, strict, err)
		}
	}
	if gr, ok := plainGround(body); ok {
		took = true
		var strict groundRequest
		if err := decodeStrictBody(body, &strict, ""); err != nil || !reflect.DeepEqual(gr, strict) {
			t.Errorf("%s:\nplain  %#v\nstrict %#v %v", body, gr, strict, err)
		}
	}
	return took
}

const plainID = `"sha256:6f1ed002ab5595859014ebf0951522d9f1a1b9fe8f1b5a8b1c0c7a2a0e3c7d11"`

// Bodies the fast paths must take (or they are dead code that only looks
// fast), and bodies they must leave to decodeStrictBody.
var (
	plainBodies = []string{
		`{"prompt":"Run a momentum strategy on WTI crude and score it by Sharpe ratio"}`,
		` { "terms" : [ "momentum", "sharpe ratio" ] } `, `{"terms":[]}`, `{"prompt":""}`, `{}`,
		`{"request":{"family":"MOM_WZS","metric":"SRP","params":{"window":[25,50,100]},"data":"oil/wti.csv"},"discovery":` + plainID + `}`,
		`{"discovery":` + plainID + `, "repair": "none", "request": {"anything": [1, {"goes": null}]}}`,
		`{"request":{},"discovery":"not an id"}`,
	}
	strictBodies = []string{
		``, `null`, `[]`, `"x"`, `{"prompt":null}`, `{"Prompt":"x"}`, `{"prompt":"x","prompt":"y"}`,
		`{"prompt":"caf\u00e9"}`, `{"prompt":"café"}`, `{"terms":["a",1]}`, `{"terms":"a"}`, `{"prompt":"x"} {}`,
		`{"request":null,"discovery":` + plainID + `}`, `{"request":[],"discovery":` + plainID + `}`,
		`{"request":{"a":1e400},"discovery":` + plainID + `}`, `{"request":{"a":1,"a":2},"discovery":` + plainID + `}`,
		`{"request":{},"discovery":{"id":` + plainID + `}}`, `{"request":{},"discovery":null}`,
		`{"request":{},"discovery":` + plainID + `,"repair":7}`, `{"request":{},"extra":1}`,
		`{"request":{"deep":` + strings.Repeat("[", 20) + strings.Repeat("]", 20) + `}}`,
	}
)

func TestPlainBodies(t *testing.T) {
	for _, b := range plainBodies {
		if !checkPlainBody(t, []byte(b)) {
			t.Errorf("not decoded plain: %s", b)
		}
	}
	for _, b := range strictBodies {
		if checkPlainBody(t, []byte(b)) {
			t.Errorf("decoded plain: %s", b)
		}
	}
}

func FuzzPlainBodies(f *testing.F) {
	for _, b := range append(plainBodies, strictBodies...) {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkPlainBody(t, body) })
}
