package httpapi

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql/playground"

	"pluginhost/models"
)

// playgroundAssets are GraphiQL, React and GraphiQL's style sheet, vendored
// from npm (see assets/playground/README.md) so that the playground works
// without the network.
//
//go:embed assets/playground/*.js assets/playground/*.css assets/playground/LICENSE.*
var playgroundAssets embed.FS

// playgroundAssetPath is where the playground page loads its assets from.
const playgroundAssetPath = "/playground/assets/"

// playgroundOptions point gqlgen's GraphiQL page at the embedded assets, with
// their Subresource Integrity hashes.
var playgroundOptions = []playground.GraphiqlConfigOption{
	playground.WithGraphiqlVersion(
		playgroundAssetPath+"graphiql.min.js", playgroundAssetPath+"graphiql.min.css",
		assetSRI("graphiql.min.js"), assetSRI("graphiql.min.css")),
	playground.WithGraphiqlReactVersion(
		playgroundAssetPath+"react.production.min.js", playgroundAssetPath+"react-dom.production.min.js",
		assetSRI("react.production.min.js"), assetSRI("react-dom.production.min.js")),
	playground.WithGraphiqlEnablePluginExplorer(false),
}

func assetSRI(name string) string {
	b, err := playgroundAssets.ReadFile("assets/playground/" + name)
	if err != nil {
		panic("httpapi: playground asset missing: " + name)
	}
	sum := sha256.Sum256(b)
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

// playgroundCSP allows only the page's own inline script and style and the
// embedded assets; GraphiQL talks to /graphql on the same origin.
const playgroundCSP = "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; font-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// playground serves GraphiQL to admins. A browser cannot send a bearer header
// when opening a page, so the page also accepts HTTP Basic authentication with
// the token as the password; the page then sends the token as a bearer header
// with every operation.
func (s *Server) playground() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, token, ok := s.pageUser(w, r, "pluginhost playground")
		if !ok {
			return
		}
		if !user.Admin {
			writeError(w, r, s.Log, models.Errorf(models.ErrForbidden, "the playground is for admins"))
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Security-Policy", playgroundCSP)
		// A session signed in with the identity provider stands for no
		// token: the page then calls the web host's endpoint, which its
		// session cookie authenticates, as the web host's pages do.
		endpoint, headers := "/graphql", map[string]string{"Authorization": "Bearer " + token}
		if token == "" {
			endpoint, headers = webhostGraphQL, map[string]string{"X-Pluginhost-App": "1"}
		}
		opts := append([]playground.GraphiqlConfigOption{
			playground.WithGraphiqlFetcherHeaders(headers),
			playground.WithStoragePrefix("pluginhost-" + base64.RawURLEncoding.EncodeToString([]byte(user.ID))),
		}, playgroundOptions...)
		playground.Handler("pluginhost", endpoint, opts...).ServeHTTP(w, r)
	})
}

// playgroundAsset serves the embedded files under /playground/assets/. They
// are public libraries, so no token is needed; a new version comes with the
// binary, so they are cached for a day only.
func playgroundAsset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	if strings.Contains(name, "/") {
		http.NotFound(w, r)
		return
	}
	b, err := fs.ReadFile(playgroundAssets, "assets/playground/"+name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	switch path.Ext(name) {
	case ".js":
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	case ".css":
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	default:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	}
	sum := sha256.Sum256(b)
	w.Header().Set("ETag", `"`+base64.RawURLEncoding.EncodeToString(sum[:])+`"`)
	w.Header().Set("Cache-Control", "public, max-age=86400")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(b))
}
