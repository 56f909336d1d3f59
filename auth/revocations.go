package auth

import (
	"context"
	"log/slog"
	"time"
)

// RevocationPoll is how often WatchRevocations looks for revoked tokens.
const RevocationPoll = time.Second

// revocationSkew is how far back, before the newest revocation seen, each
// look reaches: replicas' clocks differ, and a revocation written by a
// replica whose clock is behind has an earlier time than ones already seen.
const revocationSkew = 30 * time.Second

// WatchRevocations looks for tokens revoked anywhere (through any replica's
// GraphQL, or with `pluginhost token revoke` on the shared database) every
// RevocationPoll until ctx ends: each is forgotten by this replica's cache,
// so it stops working here, and told to revoked, which closes what it
// opened (websockets). Revocations from before the watch began are not
// told: nothing opened here can have used them since.
func (s *Service) WatchRevocations(ctx context.Context, log *slog.Logger, revoked func(hash string)) {
	since := time.Now().Add(-revocationSkew).UnixMicro()
	told := map[string]int64{} // hash -> revoked_at, of those told
	t := time.NewTicker(RevocationPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var rows []struct {
			Hash      string
			RevokedAt int64
		}
		err := s.DB.Read.WithContext(ctx).Table("tokens").Select("hash, revoked_at").
			Where("revoked_at > ?", since-revocationSkew.Microseconds()).Order("revoked_at").Limit(1000).Scan(&rows).Error
		if err != nil {
			if ctx.Err() == nil && log != nil {
				log.Warn("auth: looking for revoked tokens failed", "err", err)
			}
			continue
		}
		for _, r := range rows {
			since = max(since, r.RevokedAt)
			if _, done := told[r.Hash]; done {
				continue
			}
			told[r.Hash] = r.RevokedAt
			s.forget(r.Hash)
			revoked(r.Hash)
		}
		for h, at := range told { // only the window is looked at again
			if at < since-2*revocationSkew.Microseconds() {
				delete(told, h)
			}
		}
	}
}

// forget drops a token from the cache.
func (s *Service) forget(hash string) {
	s.mu.Lock()
	delete(s.cache, hash)
	s.mu.Unlock()
}
