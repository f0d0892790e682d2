// Command bareecho is the HTTP floor tools/bench/run.sh measures the server
// against: an echo/v4 server (the router groundgate serves with, the same
// version, from go.mod) whose one handler reads the POSTed body and answers
// a fixed 630-byte JSON document, about the size of a discovery result.
// No middleware, no logging: what is left is net/http, echo's routing and
// the loopback connection, which every real handler pays too.
//
//	bareecho -addr 127.0.0.1:0
//
// prints "listening HOST:PORT" on standard output once it accepts.
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/labstack/echo/v4"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	flag.Parse()
	if err := run(*addr); err != nil {
		fmt.Fprintln(os.Stderr, "bareecho:", err)
		os.Exit(1)
	}
}

// body is a JSON object of exactly 630 bytes.
var body = func() []byte {
	const head, tail = `{"id":"sha256:0000000000000000000000000000000000000000000000000000000000000000","note":"`, `"}`
	return []byte(head + strings.Repeat("x", 630-len(head)-len(tail)) + tail)
}()

func run(addr string) error {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.POST("/*", func(c echo.Context) error {
		if _, err := io.Copy(io.Discard, c.Request().Body); err != nil {
			return err
		}
		return c.JSONBlob(http.StatusOK, body)
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Printf("listening %s\n", ln.Addr())
	return (&http.Server{Handler: e}).Serve(ln)
}
