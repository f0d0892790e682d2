package gateway

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// awaiting returns a tap with one awaited request, id 7, and its slot.
func awaiting(t *testing.T, limit int) (*tap, *slot) {
	t.Helper()
	tp := newTap(limit)
	s := &slot{}
	id, _ := jsonrpc.MakeID(float64(7))
	tp.outbound(withSlot(context.Background(), s), &jsonrpc.Request{ID: id, Method: "tools/call"})
	return tp, s
}

func TestTapKeepsTheRawResult(t *testing.T) {
	tp, s := awaiting(t, 1<<20)
	v := tp.inspect([]byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"x"}],  "isError":false}}`))
	if v.fatal != nil || v.replace != nil || v.msg == nil {
		t.Fatalf("%+v", v)
	}
	raw, problem := s.answer()
	if problem != nil || string(raw) != `{"content":[{"type":"text","text":"x"}],  "isError":false}` {
		t.Fatalf("%s %v", raw, problem)
	}
	// Notifications and answers nobody awaits pass untouched.
	if v := tp.inspect([]byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)); v.msg == nil {
		t.Fatalf("%+v", v)
	}
	tp.forget(s)
	if len(tp.pending) != 0 {
		t.Fatal("forget left the slot")
	}
}

// Malformed answers are refused: the awaited call gets a JSON-RPC error
// in their place and its slot the reason; garbage with no readable id
// ends the session, failing every awaited call.
func TestTapRefuses(t *testing.T) {
	for _, frame := range []string{
		`{"jsonrpc":"2.0","id":7,"result":{"a":1,"a":2}}`,
		`{"jsonrpc":"2.0","id":7,"result":{},"result":{"content":[]}}`,
		`{"jsonrpc":"2.0","id":7,"result":{},"Result":{}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"content":[]}} trailing`,
		`{"jsonrpc":"2.0","id":7,"result":"\xff"}`,
		`{"jsonrpc":"2.0","id":7,"result":{"content":[}`,
	} {
		tp, s := awaiting(t, 1<<20)
		v := tp.inspect([]byte(frame))
		if v.replace == nil || v.replace.Error == nil {
			t.Errorf("%s: %+v", frame, v)
			continue
		}
		if _, p := s.answer(); !errors.Is(p, ErrProtocol) {
			t.Errorf("%s: slot problem %v", frame, p)
		}
	}
	for _, frame := range []string{`garbage`, `[{"jsonrpc":"2.0","id":7,"result":{}}]`, `{"jsonrpc":"2.0","result":{}`} {
		tp, s := awaiting(t, 1<<20)
		if v := tp.inspect([]byte(frame)); !errors.Is(v.fatal, ErrProtocol) {
			t.Errorf("%s: %+v", frame, v)
		}
		if _, p := s.answer(); !errors.Is(p, ErrProtocol) {
			t.Errorf("%s: slot problem %v", frame, p)
		}
	}
	// Over the limit: refused unread, attributed by the id at its head.
	tp, s := awaiting(t, 64)
	if v := tp.inspect([]byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 100) + `"}]}}`)); v.replace == nil {
		t.Fatalf("%+v", v)
	}
	if _, p := s.answer(); !errors.Is(p, ErrResultTooLarge) {
		t.Fatalf("slot problem %v", p)
	}
	// … and with the id after a result longer than the head kept, it
	// cannot be attributed: the session ends, and the awaited call learns
	// why.
	tp, s = awaiting(t, 64)
	if v := tp.inspect([]byte(`{"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", maxHead) + `"}]},"jsonrpc":"2.0","id":7}`)); !errors.Is(v.fatal, ErrResultTooLarge) {
		t.Fatalf("%+v", v)
	}
	if _, p := s.answer(); !errors.Is(p, ErrResultTooLarge) {
		t.Fatalf("slot problem %v", p)
	}
}

func TestFrameReader(t *testing.T) {
	in := "{\"a\":1}\r\n\n" + strings.Repeat("y", 100) + "\n{\"id\":3," + strings.Repeat("z", 200) + "\n{\"b\":2}"
	fr := frameReader{r: bufio.NewReaderSize(strings.NewReader(in), 16), limit: 50}
	var got []string
	for {
		frame, n, err := fr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if frame == nil {
			got = append(got, "over:"+string(fr.head[:min(len(fr.head), 8)]))
			if n < 100 {
				t.Errorf("oversize of %d", n)
			}
			continue
		}
		got = append(got, string(frame))
	}
	if strings.Join(got, "|") != `{"a":1}|over:yyyyyyyy|over:{"id":3,|{"b":2}` {
		t.Fatalf("%q", got)
	}
}

// The round tripper adds the configured headers and puts JSON bodies and
// SSE events through the tap.
func TestRoundTripper(t *testing.T) {
	var gotAuth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		switch r.URL.Path {
		case "/json":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":7,"result":{"a":1,"a":2}}`)
		case "/big":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","result":{"x":"`+strings.Repeat("x", 5000)+`"},"id":7}`)
		case "/sse":
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, ": comment\n\nevent: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n")
			io.WriteString(w, "id: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\n")
			io.WriteString(w, "data: \"result\":{\"content\":[],\"content\":[]}}\n\n")
			io.WriteString(w, "id: 3\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"x\":\""+strings.Repeat("x", 5000)+"\"}}\n\n")
			io.WriteString(w, "event: other\ndata: not json\n\n")
		}
	}))
	defer srv.Close()
	post := func(path string) (string, *slot) {
		tp, s := newTap(1024), &slot{}
		rt := &roundTripper{base: http.DefaultTransport, headers: http.Header{"Authorization": {"Bearer t"}}, tap: tp}
		body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}`
		req, _ := http.NewRequestWithContext(withSlot(context.Background(), s), http.MethodPost, srv.URL+path, strings.NewReader(body))
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(b), s
	}
	out, s := post("/json")
	if gotAuth != "Bearer t" || !strings.Contains(out, `"error"`) || !strings.Contains(out, `"id":7`) {
		t.Fatalf("auth %q body %s", gotAuth, out)
	}
	if _, p := s.answer(); !errors.Is(p, ErrProtocol) {
		t.Fatalf("slot %v", p)
	}
	out, s = post("/big")
	if _, p := s.answer(); !errors.Is(p, ErrResultTooLarge) || !strings.Contains(out, `"id":7`) {
		t.Fatalf("slot %v body %s", p, out)
	}
	out, s = post("/sse")
	events := strings.Split(strings.TrimSpace(out), "\n\n")
	if len(events) != 5 || events[0] != ": comment" || !strings.Contains(events[1], "notifications/progress") || !strings.Contains(events[1], "id: 1") {
		t.Fatalf("events %q", events)
	}
	if !strings.HasPrefix(events[2], "id: 2\ndata: {") || !strings.Contains(events[2], `"error"`) || !strings.HasPrefix(events[3], "id: 3\ndata: {") || !strings.Contains(events[3], `"error"`) {
		t.Fatalf("refused events %q", events[2:4])
	}
	if events[4] != "event: other\ndata: not json" {
		t.Fatalf("other event %q", events[4])
	}
	if _, p := s.answer(); !errors.Is(p, ErrProtocol) {
		t.Fatalf("slot %v", p)
	}
}

// A line over the limit when the limit is above maxHead: what it keeps
// of the line is maxHead bytes, however long the buffered part was (it
// once sliced past its end).
func TestFrameReaderLongOversize(t *testing.T) {
	limit := 4 * maxHead
	in := strings.Repeat("w", 3*limit) + "\n{\"ok\":1}\n"
	fr := frameReader{r: bufio.NewReaderSize(strings.NewReader(in), 16), limit: limit}
	frame, n, err := fr.next()
	if err != nil || frame != nil || n != 3*limit+1 || len(fr.head) != maxHead {
		t.Fatalf("oversize: frame %q n %d head %d err %v", frame, n, len(fr.head), err)
	}
	if frame, _, err = fr.next(); err != nil || string(frame) != `{"ok":1}` {
		t.Fatalf("next: %q %v", frame, err)
	}
}

// FuzzFrameReader: any stream, limit and buffer size split into frames
// of at most limit bytes, oversized lines reported, never a panic.
func FuzzFrameReader(f *testing.F) {
	f.Add([]byte("{\"a\":1}\n"+strings.Repeat("x", 300)+"\n"), 20, 16)
	f.Add([]byte(strings.Repeat("y", 5000)), 1000, 16)
	f.Fuzz(func(t *testing.T, in []byte, limit, size int) {
		limit, size = 1+abs(limit)%(8*maxHead), 16+abs(size)%4096
		fr := frameReader{r: bufio.NewReaderSize(bytes.NewReader(in), size), limit: limit}
		for i := 0; i <= len(in); i++ {
			frame, n, err := fr.next()
			if err != nil {
				return
			}
			if len(frame) > limit || (frame == nil && (n <= limit || len(fr.head) > maxHead)) {
				t.Fatalf("frame %d bytes, n %d, head %d, limit %d", len(frame), n, len(fr.head), limit)
			}
		}
	})
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
