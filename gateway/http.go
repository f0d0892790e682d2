package gateway

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// An http upstream is reached with the SDK's streamable HTTP client
// transport over roundTripper, which adds the configured headers and puts
// every message the upstream answers (a JSON body, each SSE event) through
// the tap, bounded by Limits.MaxMessageBytes.

type roundTripper struct {
	base    http.RoundTripper
	headers http.Header
	tap     *tap
}

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	for k, v := range rt.headers {
		r.Header[k] = v
	}
	// The request the answer is for: the SDK's own bytes.
	var forID jsonrpc.ID
	if req.Method == http.MethodPost && req.GetBody != nil {
		if body, err := req.GetBody(); err == nil {
			b, _ := io.ReadAll(io.LimitReader(body, maxHead))
			body.Close()
			if msg, err := jsonrpc.DecodeMessage(b); err == nil {
				if call, ok := msg.(*jsonrpc.Request); ok && call.IsCall() {
					forID = call.ID
					rt.tap.outbound(req.Context(), call)
				}
			}
		}
	}
	resp, err := rt.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		// An error's body is read for its message only: cut at the limit.
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.LimitReader(resp.Body, int64(rt.tap.limit)), resp.Body}
		return resp, nil
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mt {
	case "application/json":
		out, err := rt.jsonBody(resp.Body, forID)
		resp.Body.Close()
		if err != nil {
			resp.Body = io.NopCloser(errReader{err})
		} else {
			resp.Body = io.NopCloser(bytes.NewReader(out))
			resp.ContentLength = int64(len(out))
			resp.Header.Del("Content-Length")
		}
	case "text/event-stream":
		resp.Body = &sseFilter{src: resp.Body, r: bufio.NewReaderSize(resp.Body, 64<<10), tap: rt.tap, forID: forID}
	}
	return resp, nil
}

// jsonBody reads a JSON answer (at most the limit) and returns the bytes
// to hand the SDK: the answer, or the error the tap wrote in its place.
func (rt *roundTripper) jsonBody(body io.Reader, forID jsonrpc.ID) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(body, int64(rt.tap.limit)+1))
	if err != nil {
		return nil, err
	}
	var v verdict
	if len(data) > rt.tap.limit {
		n := len(data)
		if m, _ := io.Copy(io.Discard, io.LimitReader(body, 1<<30)); m > 0 {
			n += int(m)
		}
		v = rt.tap.oversize(data[:min(len(data), maxHead)], n, forID)
	} else {
		v = rt.tap.inspect(data)
	}
	switch {
	case v.fatal != nil:
		return nil, v.fatal
	case v.replace != nil:
		return jsonrpc.EncodeMessage(v.replace)
	}
	return data, nil
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// sseFilter passes an SSE stream through, event by event, putting each
// event's data through the tap: an event over the limit is skipped unread
// (its answer replaced by the tap's error), a refused one replaced, and
// the other lines (id, event, retry, comments) kept.
type sseFilter struct {
	src   io.ReadCloser
	r     *bufio.Reader
	tap   *tap
	forID jsonrpc.ID // the call whose POST opened the stream, if any
	out   bytes.Buffer
	err   error
}

func (f *sseFilter) Close() error { return f.src.Close() }

func (f *sseFilter) Read(p []byte) (int, error) {
	for f.out.Len() == 0 && f.err == nil {
		f.err = f.event()
	}
	if f.out.Len() > 0 {
		return f.out.Read(p)
	}
	return 0, f.err
}

// maxFieldLine bounds an SSE line that is not data (id, event, retry, a
// comment).
const maxFieldLine = 4 << 10

// event reads one event (up to its blank line) into out.
func (f *sseFilter) event() error {
	var (
		other []byte // the event's lines that are not data, as they came
		data  []byte
		head  []byte
		size  int
		over  bool
		name  string
		lines int
	)
	for {
		line, err := f.line(&size, &over, &head)
		if err != nil {
			// At the end of the stream an unfinished event is dropped,
			// as SSE readers do.
			return err
		}
		if line == nil {
			break // the blank line ending the event
		}
		lines++
		if over {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, value...)
			if len(data) > f.tap.limit {
				over = true
				head = append(head[:0], data[:min(len(data), maxHead)]...)
				data = nil
			}
		default:
			if len(line) > maxFieldLine {
				return fmt.Errorf("%w: an SSE line of %d bytes", ErrProtocol, len(line))
			}
			if string(field) == "event" {
				name = string(value)
			}
			other = append(other, line...)
			other = append(other, '\n')
		}
	}
	var v verdict
	switch {
	case lines == 0:
		f.out.WriteString("\n")
		return nil
	case over:
		v = f.tap.oversize(head, size, f.forID)
	case data == nil || (name != "" && name != "message"):
		// Not a message the SDK reads: passed on as it came.
		f.out.Write(other)
		if data != nil {
			f.out.WriteString("data: ")
			f.out.Write(bytes.ReplaceAll(data, []byte("\n"), []byte("\ndata: ")))
			f.out.WriteString("\n")
		}
		f.out.WriteString("\n")
		return nil
	default:
		v = f.tap.inspect(data)
	}
	if v.fatal != nil {
		return v.fatal
	}
	f.out.Write(other)
	msg := data
	if v.replace != nil {
		b, err := jsonrpc.EncodeMessage(v.replace)
		if err != nil {
			return err
		}
		msg = b
	}
	f.out.WriteString("data: ")
	f.out.Write(bytes.ReplaceAll(msg, []byte("\n"), []byte("\ndata: ")))
	f.out.WriteString("\n\n")
	return nil
}

// line reads one line without its ending, or nil for a blank line. Once
// the event is over the limit (*over), lines are read and dropped (an
// empty, non-nil line); *size counts the event's bytes.
func (f *sseFilter) line(size *int, over *bool, head *[]byte) ([]byte, error) {
	var buf []byte
	blank := true
	for {
		chunk, err := f.r.ReadSlice('\n')
		*size += len(chunk)
		if len(bytes.TrimRight(chunk, "\r\n")) > 0 {
			blank = false
		}
		if !*over {
			buf = append(buf, chunk...)
			if len(buf) > f.tap.limit+maxFieldLine {
				*over = true
				*head = append((*head)[:0], buf[:min(len(buf), maxHead)]...)
				buf = nil
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil && (blank || !errors.Is(err, io.EOF)) {
			return nil, err
		}
		break
	}
	switch {
	case blank:
		return nil, nil
	case *over:
		return []byte{}, nil
	}
	return bytes.TrimRight(buf, "\r\n"), nil
}
