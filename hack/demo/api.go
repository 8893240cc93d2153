package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/retry-operator/retry-operator/hack/demo/demoapi"
)

// demoAPI is the rate-limited API, served on loopback.
type demoAPI struct {
	server *demoapi.Server
	http   *http.Server
	url    string // http://host:port, no trailing slash
	note   string // why it is not on the address asked for, if it is not
}

// startAPI serves the demo API on addr, or on a free loopback port when addr
// is taken (another demo running, say).
func startAPI(addr string) (*demoAPI, error) {
	note := ""
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		note = fmt.Sprintf(" (%s is taken)", addr)
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return nil, err
		}
	}
	s := demoapi.New()
	s.Log = func(e demoapi.Entry) { fmt.Println("   demo-api |", e) }
	a := &demoAPI{
		server: s,
		http:   &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second},
		url:    "http://" + ln.Addr().String(),
		note:   note,
	}
	go func() {
		if err := a.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Println("demo: demo API:", err)
		}
	}()
	return a, nil
}

func (a *demoAPI) stop() {
	step("stopping the demo API")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = a.http.Shutdown(ctx)
}
