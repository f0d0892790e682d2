package airline

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/internal/testio"
)

// Task is one of tasks.json's tasks, as far as the replay reads it.
type Task struct {
	Index   int `json:"index"`
	Actions []struct {
		Name      string         `json:"name"`
		Arguments jsontext.Value `json:"arguments"`
	} `json:"actions"`
}

// oracle is oracle.json: τ-bench's own outputs and digests.
type oracle struct {
	InitialDB string `json:"initial_db"`
	Tasks     []struct {
		Index         int              `json:"index"`
		ActionOutputs []jsontext.Value `json:"action_outputs"`
		FinalDB       string           `json:"final_db"`
	} `json:"tasks"`
}

// pyValue reads JSON as Python's json.loads does: objects in member
// order, numbers as ints or floats by their literal.
func pyValue(raw []byte) (any, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	v, err := readPy(dec)
	if err != nil {
		return nil, err
	}
	return v, nil
}

func readPy(dec *jsontext.Decoder) (any, error) {
	switch dec.PeekKind() {
	case '{':
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
		o := Obj{}
		for dec.PeekKind() != '}' {
			k, err := dec.ReadToken()
			if err != nil {
				return nil, err
			}
			key := k.String()
			v, err := readPy(dec)
			if err != nil {
				return nil, err
			}
			o = append(o, Member{key, v})
		}
		_, err := dec.ReadToken()
		return o, err
	case '[':
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
		a := []any{}
		for dec.PeekKind() != ']' {
			v, err := readPy(dec)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.ReadToken()
		return a, err
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case 'n':
		return nil, nil
	case 't', 'f':
		return tok.Bool(), nil
	case '"':
		return tok.String(), nil
	case '0':
		var n Num
		return n, n.UnmarshalJSON([]byte(tok.String()))
	}
	return nil, fmt.Errorf("unexpected %v", tok.Kind())
}

// expected is the text τ-bench's tool answered: the oracle keeps it
// parsed where it was JSON, and json.dumps gives it back.
func expected(t *testing.T, raw jsontext.Value) string {
	t.Helper()
	v, err := pyValue(raw)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := v.(string); ok {
		return s
	}
	return Dumps(v)
}

func readDB(t testing.TB, dir string) [3][]byte {
	t.Helper()
	var raw [3][]byte
	for i, name := range DBFiles {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		raw[i] = b
	}
	return raw
}

// TestOracle replays every task's gold actions, in order, on a fresh
// world (a Clone of the one loaded) and checks each answer against oracle.json byte for byte (as
// json.dumps writes it) and the final world's digest.
func TestOracle(t *testing.T) {
	dir := testio.SharedData(t, "tau-airline")
	raw := readDB(t, filepath.Join(dir, "db"))
	var tasks []Task
	var orc oracle
	for name, v := range map[string]any{"tasks.json": &tasks, "oracle.json": &orc} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := hashing.DecodeFields(b, v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if len(tasks) != len(orc.Tasks) {
		t.Fatalf("%d tasks, %d in the oracle", len(tasks), len(orc.Tasks))
	}
	base, err := Parse(raw[0], raw[1], raw[2])
	if err != nil {
		t.Fatal(err)
	}
	if got := base.Digest(); got != orc.InitialDB {
		t.Errorf("initial digest %s, oracle %s", got, orc.InitialDB)
	}
	var outs, outsOK, digestsOK int
	for i, task := range tasks {
		o := orc.Tasks[i]
		if o.Index != task.Index || len(o.ActionOutputs) != len(task.Actions) {
			t.Fatalf("task %d: the oracle's entry does not match", task.Index)
		}
		w := base.Clone()
		for j, a := range task.Actions {
			got := w.Call(a.Name, a.Arguments)
			want := expected(t, o.ActionOutputs[j])
			outs++
			if got == want {
				outsOK++
			} else {
				t.Errorf("task %d action %d %s%s:\n got %.400s\nwant %.400s", task.Index, j, a.Name, a.Arguments, got, want)
			}
		}
		if got := w.Digest(); got == o.FinalDB {
			digestsOK++
		} else {
			t.Errorf("task %d: final digest %s, oracle %s", task.Index, got, o.FinalDB)
		}
	}
	if got := base.Digest(); got != orc.InitialDB {
		t.Errorf("the replays changed the world they were cloned from: %s", got)
	}
	t.Logf("gold outputs reproduced: %d/%d; final digests: %d/%d", outsOK, outs, digestsOK, len(tasks))
}

func TestDumpsPython(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{Obj{{"a", Int(1)}, {"b", Num{F: 1200, Float: true}}, {"c", []any{"é\n", Num{F: 0.1, Float: true}}}}, `{"a": 1, "b": 1200.0, "c": ["\u00e9\n", 0.1]}`},
		{[]any{Num{F: 1e16, Float: true}, Num{F: 1.5e-5, Float: true}, Num{F: 123456789012345.6, Float: true}}, `[1e+16, 1.5e-05, 123456789012345.6]`},
		{"😀", `"\ud83d\ude00"`},
	} {
		if got := Dumps(c.v); got != c.want {
			t.Errorf("Dumps = %s, want %s", got, c.want)
		}
	}
	if got := string(DumpsSorted(Obj{{"b", "é"}, {"a", Int(2)}})); got != `{"a":2,"b":"é"}` {
		t.Errorf("DumpsSorted = %s", got)
	}
}

func TestCalculate(t *testing.T) {
	w := &World{}
	for expr, want := range map[string]string{
		"2 * ((350 - 122) + (499 - 127))": "1200.0",
		"10 / 3":                          "3.33",
		"-2 ** 2":                         "-4.0",
		"2 ** -1":                         "0.5",
		"7 // 2":                          "3.0",
		"-7 // 2":                         "-4.0",
		"1 / 0":                           "Error: division by zero",
		"2 +":                             "Error: invalid syntax (<string>, line 1)",
		"2.675 * 1":                       "2.67",
		"abc":                             "Error: invalid characters in expression",
	} {
		if got := w.Calculate(expr); got != want {
			t.Errorf("calculate(%q) = %q, want %q", expr, got, want)
		}
	}
	if !strings.HasPrefix(w.Calculate("1/0"), "Error: ") {
		t.Error("no error")
	}
}
