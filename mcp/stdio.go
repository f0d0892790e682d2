package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Stdio is the transport `groundgate mcp` serves on: newline-delimited
// JSON-RPC on r and w (the process's stdin and stdout).
//
// The SDK's own stdio transport ends the session at the first line that is
// not a JSON-RPC message, dropping answers still in flight. Here such a
// line gets JSON-RPC's answer (-32700 parse error, -32600 invalid request,
// id null) and the session goes on; a line over MaxFrame bytes is skipped
// the same way, without being held in memory.
func Stdio(r io.Reader, w io.Writer) sdk.Transport { return stdio{r: r, w: w} }

type stdio struct {
	r io.Reader
	w io.Writer
}

func (t stdio) Connect(context.Context) (sdk.Connection, error) {
	c := &lineConn{w: t.w, in: make(chan lineOrErr), closed: make(chan struct{})}
	go c.readLines(t.r)
	return c, nil
}

type lineOrErr struct {
	msg jsonrpc.Message
	err error
}

type lineConn struct {
	wmu       sync.Mutex
	w         io.Writer
	in        chan lineOrErr
	closed    chan struct{}
	closeOnce sync.Once
}

// readLines decodes one message per line. It runs until r ends or the
// connection closes; a read of the process's stdin cannot be interrupted,
// so on Close it is left to end with the process.
func (c *lineConn) readLines(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, tooLong, err := readLine(br, MaxFrame)
		var m lineOrErr
		switch {
		case tooLong:
			c.reject(jsonrpc.CodeInvalidRequest, fmt.Sprintf("the message is over %d bytes", MaxFrame))
		case len(bytes.TrimSpace(line)) == 0:
		case bytes.HasPrefix(bytes.TrimSpace(line), []byte("[")):
			c.reject(jsonrpc.CodeInvalidRequest, "batches are not supported: send one message per line")
		case json.Valid(line) && !bytes.HasPrefix(bytes.TrimSpace(line), []byte("{")):
			c.reject(jsonrpc.CodeInvalidRequest, "a message is a JSON object")
		default:
			if cerr := checkMessage(line); cerr != nil {
				c.reject(jsonrpc.CodeParseError, "not a JSON-RPC 2.0 message: "+cerr.Error())
				break
			}
			msg, derr := jsonrpc.DecodeMessage(line)
			if derr != nil {
				c.reject(jsonrpc.CodeParseError, "not a JSON-RPC 2.0 message: "+derr.Error())
			} else {
				m.msg = msg
			}
		}
		if m.msg == nil && err == nil {
			continue
		}
		if m.msg == nil {
			m.err = err
		}
		select {
		case c.in <- m:
		case <-c.closed:
			return
		}
		if m.msg != nil && err != nil {
			select {
			case c.in <- lineOrErr{err: err}:
			case <-c.closed:
			}
		}
		if err != nil {
			return
		}
	}
}

// readLine reads up to '\n'. A line over limit bytes is read to its end
// and dropped (tooLong); err is io.EOF after the last line.
func readLine(br *bufio.Reader, limit int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > limit {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return line, tooLong, err
	}
}

// reject answers a line that is no request: without an id, the client
// cannot tell which request it was, but it learns why.
func (c *lineConn) reject(code int64, msg string) {
	b, _ := json.Marshal(struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      *int           `json:"id"` // always null
		Error   *jsonrpc.Error `json:"error"`
	}{"2.0", nil, &jsonrpc.Error{Code: code, Message: msg}})
	_ = c.writeLine(b)
}

func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.in:
		return m.msg, m.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	}
}

func (c *lineConn) Write(_ context.Context, msg jsonrpc.Message) error {
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("mcp: encode a message: %w", err)
	}
	return c.writeLine(b)
}

// writeLine writes one message and its newline; writes never interleave.
func (c *lineConn) writeLine(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	select {
	case <-c.closed:
		return io.ErrClosedPipe
	default:
	}
	_, err := c.w.Write(append(b, '\n'))
	return err
}

func (c *lineConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

func (c *lineConn) SessionID() string { return "" }
