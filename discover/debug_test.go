package discover

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2/search/query"
)

func TestDebugKeyword(t *testing.T) {
	terms := strings.Split(os.Getenv("GG_TERMS"), ",")
	if terms[0] == "" {
		t.Skip()
	}
	s, _ := mustOpenStore(t)
	d := mustNew(t, s)
	x := d.cur
	for _, term := range terms {
		f := d.an.foldTerm(term)
		lead, lt, _ := x.search(context.Background(), query.NewDisjunctionQuery([]query.Query{phraseQuery(f.keys, fieldName), phraseQuery(f.keys, fieldHead)}), 50)
		body, bt, _ := x.search(context.Background(), phraseQuery(f.keys, fieldDesc), 50)
		t.Logf("%q keys=%q lead=%d %v\n   body=%d %v", term, f.keys, lt, lead, bt, body)
	}
}
