package main

import (
	"bytes"
	"context"
	stdjson "encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/groundgate/groundgate/airline"
	"github.com/groundgate/groundgate/gateway/upstreamtest"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/internal/testio"
)

// bin is the command, built once by TestMain.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "airline-mcp-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "airline-mcp")
	code := 1
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
	} else {
		code = m.Run()
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// fixtureDB is the repository's small world (package airline's testdata).
var fixtureDB = filepath.Join("..", "..", "airline", "testdata", "db")

func TestUsage(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--help"}, nil, io.Discard, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	if !strings.Contains(out.String(), "-db") {
		t.Errorf("--help does not mention --db: %s", out.String())
	}
	for _, args := range [][]string{{}, {"--no-such-flag"}, {"--db", fixtureDB, "extra"}} {
		if err := run(context.Background(), args, nil, io.Discard, io.Discard); !errors.Is(err, errUsage) {
			t.Errorf("%q: %v, want errUsage", args, err)
		}
	}
	if err := run(context.Background(), []string{"--db", t.TempDir()}, nil, io.Discard, io.Discard); err == nil {
		t.Error("an empty --db dir: no error")
	}
}

// probe is one of the fixture oracle's single calls.
type probe struct {
	Name      string         `json:"name"`
	Arguments jsontext.Value `json:"arguments"`
	Output    string         `json:"output"`
}

func fixtureProbe(t *testing.T, name, contains string) probe {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "airline", "testdata", "oracle.json"))
	if err != nil {
		t.Fatal(err)
	}
	var orc struct {
		Probes []probe `json:"probes"`
	}
	if err := hashing.DecodeFields(b, &orc); err != nil {
		t.Fatal(err)
	}
	for _, p := range orc.Probes {
		if p.Name == name && strings.Contains(string(p.Arguments), contains) {
			return p
		}
	}
	t.Fatalf("no probe %s %s", name, contains)
	return probe{}
}

// Over stdio, with the SDK's client: the 14 tools as tools.json gives
// them, a read, a write that the next read sees, and an error.
func TestStdio(t *testing.T) {
	cs := upstreamtest.Connect(t, upstreamtest.Command(t, bin, "--db", fixtureDB), nil, nil)
	tools := upstreamtest.ListAll(t, cs)
	specs, err := airline.Specs()
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != len(specs) {
		t.Errorf("%d tools, want %d", len(tools), len(specs))
	}
	for _, s := range specs {
		tool, ok := tools[s.Name]
		if !ok {
			t.Errorf("%s not listed", s.Name)
			continue
		}
		if tool.Description != s.Description {
			t.Errorf("%s: description %q", s.Name, tool.Description)
		}
		got, err := jsontextMarshal(tool.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := hashing.CanonicalizeJSON(s.Parameters)
		if got != string(want) {
			t.Errorf("%s: input schema %s, want %s", s.Name, got, want)
		}
		a := tool.Annotations
		if a == nil || a.ReadOnlyHint == airline.Writes[s.Name] {
			t.Errorf("%s: annotations %+v", s.Name, a)
		}
		if airline.Writes[s.Name] && (a.DestructiveHint == nil || *a.DestructiveHint != (s.Name != "book_reservation" && s.Name != "send_certificate")) {
			t.Errorf("%s: destructiveHint %v", s.Name, a.DestructiveHint)
		}
	}

	call := func(name string, args jsontext.Value) *sdk.CallToolResult {
		return upstreamtest.Call(t, cs, name, args)
	}
	before := call("get_reservation_details", jsontext.Value(`{"reservation_id":"Z7GOZK"}`))
	if before.IsError || !strings.HasPrefix(upstreamtest.Text(t, before), `{"reservation_id": "Z7GOZK", `) || strings.Contains(upstreamtest.Text(t, before), "cancelled") {
		t.Errorf("read: %+v", before)
	}
	p := fixtureProbe(t, "cancel_reservation", "Z7GOZK")
	res := call(p.Name, p.Arguments)
	if got := upstreamtest.Text(t, res); res.IsError || got != p.Output {
		t.Errorf("write: %s\nwant %s", got, p.Output)
	}
	after := call("get_reservation_details", jsontext.Value(`{"reservation_id":"Z7GOZK"}`))
	if got := upstreamtest.Text(t, after); got != p.Output {
		t.Errorf("read after the write: %s\nwant %s", got, p.Output)
	}
	miss := call("get_reservation_details", jsontext.Value(`{"reservation_id":"NOSUCH"}`))
	if got := upstreamtest.Text(t, miss); !miss.IsError || got != "Error: user not found" {
		t.Errorf("a miss: %q isError %v", got, miss.IsError)
	}
	// Arguments are checked by the tool, as τ-bench's Python checks them.
	bad := call("get_user_details", jsontext.Value(`{}`))
	if got := upstreamtest.Text(t, bad); !bad.IsError || got != "Error: GetUserDetails.invoke() missing 1 required positional argument: 'user_id'" {
		t.Errorf("no arguments: %q isError %v", got, bad.IsError)
	}
}

// On τ-bench's own world: task 1's gold cancellation answers as
// oracle.json says.
func TestStdioShared(t *testing.T) {
	dir := testio.SharedData(t, "tau-airline")
	cs := upstreamtest.Connect(t, upstreamtest.Command(t, bin, "--db", filepath.Join(dir, "db")), nil, nil)
	res := upstreamtest.Call(t, cs, "get_user_details", jsontext.Value(`{"user_id":"olivia_gonzalez_2305"}`))
	if got := upstreamtest.Text(t, res); res.IsError || !strings.HasPrefix(got, `{"name": {"first_name": "Olivia", "last_name": "Gonzalez"}, `) {
		t.Errorf("get_user_details: %.200s", got)
	}
	res = upstreamtest.Call(t, cs, "cancel_reservation", jsontext.Value(`{"reservation_id":"Z7GOZK"}`))
	want := `{"reservation_id": "Z7GOZK", "user_id": "olivia_gonzalez_2305", "origin": "EWR", "destination": "EWR", "flight_type": "one_way", "cabin": "basic_economy", "flights": [{"origin": "EWR", "destination": "IAH", "flight_number": "HAT188", "date": "2024-05-28", "price": 52}, {"origin": "IAH", "destination": "EWR", "flight_number": "HAT207", "date": "2024-05-28", "price": 87}], "passengers": [{"first_name": "Olivia", "last_name": "Gonzalez", "dob": "1988-06-13"}], "payment_history": [{"payment_id": "gift_card_2200803", "amount": 169}, {"payment_id": "gift_card_2200803", "amount": -169}], "created_at": "2024-05-13T19:41:32", "total_baggages": 0, "nonfree_baggages": 0, "insurance": "yes", "status": "cancelled"}`
	if got := upstreamtest.Text(t, res); res.IsError || got != want {
		t.Errorf("cancel_reservation: %s\nwant %s", got, want)
	}
}

// jsontextMarshal is v's canonical JSON.
func jsontextMarshal(v any) (string, error) {
	b, err := stdjson.Marshal(v)
	if err != nil {
		return "", err
	}
	c, err := hashing.CanonicalizeJSON(b)
	return string(c), err
}
