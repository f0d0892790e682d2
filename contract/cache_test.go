package contract

import (
	"slices"
	"testing"
)

// TestCacheSharesClauses: a contract checked through a cache is not parsed
// again when the cache compiles it for evaluation, a clause with the same
// expression under another name or message reuses the compilation under
// its own, and the cache reports what Check reports, good and bad.
func TestCacheSharesClauses(t *testing.T) {
	params := []Param{{Name: "window", Type: "int"}}
	good := &Contract{
		Pre:  []Clause{{Name: "covers", Expr: "data.rows > params.window", Message: "too short"}},
		Post: []Clause{{Name: "finite", Expr: "result.finite_share > 0.5", Message: "mostly NaN"}},
	}
	bad := &Contract{Pre: []Clause{
		{Name: "broken", Expr: "data.rows >", Message: "m"},
		{Name: "typed", Expr: "data.rows == 'many'", Message: "m"},
	}}
	c := NewCache(16)
	for _, con := range []*Contract{good, bad, good, bad} {
		if got, want := c.Check(con, "family", params), Check(con, "family", params); !slices.Equal(got, want) {
			t.Fatalf("cache.Check = %v, Check = %v", got, want)
		}
	}
	if n := len(c.clauses); n != 4 {
		t.Fatalf("%d clauses cached after checking 4 expressions twice, want 4", n)
	}

	p, err := c.Program("id", "family", params, good)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.clauses) != 4 {
		t.Errorf("Program compiled a checked clause again: %d clauses cached", len(c.clauses))
	}
	for _, cc := range append(slices.Clone(p.Pre), p.Post...) {
		key := cc.Clause
		memo := c.clauses[clauseKey("family", cc.Phase, params, key.Expr)]
		if memo.c == nil || memo.c.prog != cc.prog {
			t.Errorf("clause %q: Program's compilation is not the checked one", key.Name)
		}
	}

	renamed := &Contract{Pre: []Clause{{Name: "long_enough", Expr: "data.rows > params.window", Message: "other words"}}}
	q, err := c.Program("id-2", "family", params, renamed)
	if err != nil {
		t.Fatal(err)
	}
	if got := q.Pre[0].Clause; got != renamed.Pre[0] {
		t.Errorf("shared compilation under another name: clause %+v", got)
	}
	if q.Pre[0].prog != p.Pre[0].prog || len(c.clauses) != 4 {
		t.Error("the same expression compiled again under another name")
	}
	if p.Pre[0].Clause != good.Pre[0] {
		t.Errorf("the first program's clause changed to %+v", p.Pre[0].Clause)
	}

	// Another kind or parameter type is another compilation.
	if _, err := c.Program("id-3", "family", []Param{{Name: "window", Type: "float"}}, good); err != nil {
		t.Fatal(err)
	}
	if len(c.clauses) != 6 {
		t.Errorf("%d clauses cached, want 6 (a parameter's type is part of the key)", len(c.clauses))
	}
}
