package browser

import (
	"bufio"
	"net"
	"strings"
	"sync"
	"time"
)

// refusingProxy is the browser's only way out: it reads the first line of
// each request (CONNECT host:port for https and websockets, an absolute URL
// for plain http), records the destination and answers 403.
type refusingProxy struct {
	ln   net.Listener
	mu   sync.Mutex
	seen []string
	wg   sync.WaitGroup
}

func startRefusingProxy() (*refusingProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &refusingProxy{ln: ln}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

func (p *refusingProxy) addr() string { return p.ln.Addr().String() }

func (p *refusingProxy) serve() {
	defer p.wg.Done()
	for {
		conn, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			line, err := bufio.NewReader(conn).ReadString('\n')
			if err != nil && line == "" {
				return
			}
			target := line
			if f := strings.Fields(line); len(f) >= 2 {
				target = f[1]
			}
			p.mu.Lock()
			p.seen = append(p.seen, target)
			p.mu.Unlock()
			conn.Write([]byte("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
		}()
	}
}

func (p *refusingProxy) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

func (p *refusingProxy) close() {
	p.ln.Close()
	p.wg.Wait()
}
