package gqlhttp

// UpdatesServed returns how many requests the usual storageUpdate's way
// answered.
func UpdatesServed(s *Server) int64 { return s.http.updates.served.Load() }
