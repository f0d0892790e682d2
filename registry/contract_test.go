package registry

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/contract"
)

// A bad contract is refused when the entry is written, with the field and
// the clause named; nothing is stored.
func TestPutRefusesBadContracts(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "r.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cases := []struct {
		name, field, expr string
		post              bool
		want              string
	}{
		{"syntax", "sem.contract.pre[0].expr", "data.rows >", false, "Syntax error"},
		{"unknown key", "sem.contract.pre[0].expr", "data.rowz > 2", false, "undeclared reference to 'data.rowz'"},
		{"unknown parameter", "sem.contract.pre[0].expr", "params.speed > 2", false, "undeclared reference to 'params"},
		{"wrong type", "sem.contract.pre[0].expr", "data.rows > 'ten'", false, "no matching overload"},
		{"not a bool", "sem.contract.pre[0].expr", "data.rows + 1", false, "not a bool"},
		{"too costly", "sem.contract.pre[0].expr", "data.columns.all(a, data.columns.all(b, data.columns.exists(c, a + b == c)))", false, "exceeds the limit"},
		{"a result in a precondition", "sem.contract.pre[0].expr", "result.pnl_rows > 0", false, "undeclared reference to 'result"},
		{"a score in a family's postcondition", "sem.contract.post[0].expr", "math.isFinite(result.score)", true, "undeclared reference"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := richEntry()
			e.Sem.Contract = &contract.Contract{}
			cl := []contract.Clause{{Name: "the_clause", Expr: c.expr, Message: "m"}}
			if c.post {
				e.Sem.Contract.Post = cl
			} else {
				e.Sem.Contract.Pre = cl
			}
			_, err := s.Put(ctx, e)
			var ve *ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, ErrInvalidEntry) {
				t.Fatalf("err %v", err)
			}
			if len(ve.Fields) != 1 || ve.Fields[0].Field != c.field || !strings.Contains(ve.Fields[0].Problem, `clause "the_clause"`) || !strings.Contains(ve.Fields[0].Problem, c.want) {
				t.Fatalf("fields %+v, want %s naming the clause and %q", ve.Fields, c.field, c.want)
			}
			if _, ok := s.Current().Get(e.Name); ok {
				t.Fatal("stored")
			}
		})
	}
	// An operation has no post-state.
	e := richEntry()
	e.Kind, e.Sem.Orientation = KindOperation, OrientNone
	e.Sem.Contract = &contract.Contract{Post: []contract.Clause{{Name: "p", Expr: "true", Message: "m"}}}
	if _, err := s.Put(ctx, e); err == nil || !strings.Contains(err.Error(), "sem.contract.post[0].expr") {
		t.Fatalf("operation post: %v", err)
	}
	// A sound contract is stored, and is part of the identity.
	good := richEntry()
	id0, _ := good.Identity()
	if _, err := s.Put(ctx, good); err != nil {
		t.Fatal(err)
	}
	good.Sem.Contract.Pre[0].Message = "another message"
	if id1, _ := good.Identity(); id1 == id0 {
		t.Fatal("a clause's message is outside the identity")
	}
}
