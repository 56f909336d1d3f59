package imageproxy_test

import (
	"log/slog"
	"net/http"

	"pluginhost/imageproxy"
)

// The REST layer authenticates the caller and checks the Instance (owner,
// enabled, network permission and grant), then hands the request over.
func ExampleProxy_Serve() {
	proxy := &imageproxy.Proxy{Logger: slog.Default()} // every limit at its default

	authenticate := func(r *http.Request) (userID string, ok bool) { return "", false } // the server's own

	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/plugin-instances/{instance_id}/ui-images:fetch", func(w http.ResponseWriter, r *http.Request) {
		userID, ok := authenticate(r)
		if !ok {
			http.Error(w, `{"error":{"code":"UNAUTHENTICATED","message":"no or bad token"}}`, http.StatusUnauthorized)
			return
		}
		// ... 403 PLUGIN_STORAGE_PERMISSION_DENIED or PERMISSION_DENIED as the contract says ...
		proxy.Serve(w, r, userID)
	})
}
