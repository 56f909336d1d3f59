package httpapi

import (
	"net/http"

	"pluginhost/access"
	"pluginhost/auth"
	"pluginhost/metrics"
	"pluginhost/models"
)

// ImageFetcher serves a checked ui-images:fetch request for a user (the
// image proxy).
type ImageFetcher interface {
	Serve(w http.ResponseWriter, r *http.Request, userID string)
}

// images is POST /v1/plugin-instances/{instance_id}/ui-images:fetch: the
// Instance must be the caller's and enabled, its manifest must request
// network and the Instance must hold the network grant; then the proxy fetches
// and verifies the image.
func images(gate *access.Gate, proxy ImageFetcher, s *Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, _ := auth.UserFrom(r.Context())
		t, err := gate.Open(r.Context(), models.Caller{UserID: user.ID}, r.PathValue("instance_id"), access.Use)
		if err != nil {
			writeError(w, r, s.Log, err)
			return
		}
		inst := t.Instance
		if !t.Manifest.HasPermission(models.PermissionNetwork) {
			metrics.ImageDenied()
			writeError(w, r, s.Log, models.Errorf(models.ErrImageDenied, "plugin %s does not request the network permission, so it may not show images", t.Installation.PluginID))
			return
		}
		if !inst.HasGrant(models.PermissionNetwork) {
			metrics.ImageDenied()
			writeError(w, r, s.Log, models.Errorf(models.ErrImageDenied, "instance %q has no network grant; grant it with setInstanceGrant to show images", inst.ID))
			return
		}
		proxy.Serve(w, r, user.ID)
	})
}
