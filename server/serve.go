package server

import (
	"context"
	"net"
	"net/http"
	"time"

	"pluginhost/database"
)

// DefaultShutdownGrace is how long requests under way may take to finish
// after SIGTERM: as long as a GraphQL request may take.
const DefaultShutdownGrace = 30 * time.Second

// Shutdown says how the server stops.
type Shutdown struct {
	// Delay is how long to keep accepting, /readyz answering 503, before
	// the listener closes.
	Delay time.Duration
	// Grace is how long requests under way may take to finish then.
	Grace time.Duration
}

// Serve serves on addr until ctx ends (SIGINT or SIGTERM, for the command),
// then drains and closes the server.
func (s *Server) Serve(ctx context.Context, addr string, dsn string, sd Shutdown) error {
	defer s.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: s.Handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	s.Log.Info("pluginhost serving", "addr", ln.Addr().String(), "db", database.Redact(dsn), "graphql", "http://"+ln.Addr().String()+"/graphql")
	s.Log.Info("open the app in a browser", "url", "http://"+ln.Addr().String()+"/app")
	// A first start tells a person how to get in.
	var users int64
	if err := s.DB.Read.WithContext(ctx).Model(&database.UserRow{}).Count(&users).Error; err == nil && users == 0 {
		s.Log.Info("no user yet: make the first admin and their token, then sign in at /app/login with it",
			"command", "pluginhost token create --user admin --admin --db '"+database.Redact(dsn)+"'")
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.drain(hs, sd)
	s.Log.Info("stopped")
	return nil
}

// drain shuts the server down without cutting anyone off, in order:
//  1. /readyz answers 503 and every response says "Connection: close", so
//     that load balancers and clients move on (httpapi.Drain);
//  2. every websocket gets the protocol's "going away" close (1001), so that
//     subscribers reconnect to another replica and resubscribe;
//  3. for sd.Delay the listener stays open: clients still sending here are
//     answered while the load balancer notices;
//  4. the listener closes and idle connections with it, and requests under
//     way get up to sd.Grace to finish; then what remains is cut.
func (s *Server) drain(hs *http.Server, sd Shutdown) {
	s.Log.Info("draining", "subscriptions", s.Hub.Open(), "websockets", s.GraphQL.Sockets.Connections(),
		"delay", sd.Delay, "grace", sd.Grace)
	s.Drain.Start()
	s.GraphQL.Sockets.Shutdown()
	s.Hub.Close()
	time.Sleep(sd.Delay)
	ctx, cancel := context.WithTimeout(context.Background(), sd.Grace)
	defer cancel()
	if err := hs.Shutdown(ctx); err != nil {
		s.Log.Warn("shutdown grace period over: cutting the requests still under way", "grace", sd.Grace)
		hs.Close()
	}
}
