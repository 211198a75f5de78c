// Package tcpproxy is a test's stand-in for a dependency that goes down: a proxy on a
// fixed loopback address that forwards to the real one while started and, stopped,
// listens nowhere and cuts every connection it forwarded.
package tcpproxy

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// FreeLoopbackAddr returns a loopback address nothing listens on (a port the kernel just
// handed out and took back).
func FreeLoopbackAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// Proxy forwards Addr to a target while started.
type Proxy struct {
	t testing.TB
	// Addr is where clients connect; it stays the same across Stop and Start.
	Addr   string
	target string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// New returns a stopped proxy to target, stopped again when the test ends.
func New(t testing.TB, target string) *Proxy {
	p := &Proxy{t: t, Addr: FreeLoopbackAddr(t), target: target, conns: map[net.Conn]struct{}{}}
	t.Cleanup(p.Stop)
	return p
}

// Start listens on the proxy's address.
func (p *Proxy) Start() {
	p.t.Helper()
	ln, err := net.Listen("tcp", p.Addr)
	require.NoError(p.t, err)
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Add(1)
	go p.accept(ln)
}

func (p *Proxy) accept(ln net.Listener) {
	defer p.wg.Done()
	for {
		down, err := ln.Accept()
		if err != nil {
			return // Stop closed the listener
		}
		up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			_ = down.Close()
			continue
		}
		p.mu.Lock()
		if p.ln != ln { // stopped meanwhile
			p.mu.Unlock()
			_ = down.Close()
			_ = up.Close()
			return
		}
		p.conns[down], p.conns[up] = struct{}{}, struct{}{}
		p.wg.Add(2)
		p.mu.Unlock()
		go p.pipe(up, down)
		go p.pipe(down, up)
	}
}

// pipe copies src to dst; when either side ends, both connections close, so the client
// sees the cut as a dead server would show it.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// Stop closes the listener and every live connection, and waits for the copiers to end.
func (p *Proxy) Stop() {
	p.mu.Lock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
