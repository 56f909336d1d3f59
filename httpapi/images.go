package httpapi

import (
	"net/http"

	"pluginhost/auth"
	"pluginhost/lifecycle"
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
func images(life *lifecycle.Service, proxy ImageFetcher, s *Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, _ := auth.UserFrom(r.Context())
		inst, err := life.Instance(r.Context(), user, r.PathValue("instance_id"))
		if err != nil {
			writeError(w, r, s.Log, err)
			return
		}
		if !inst.Enabled {
			writeError(w, r, s.Log, models.Errorf(models.ErrPermissionDenied, "instance %q is disabled", inst.ID))
			return
		}
		instl, err := life.Installation(r.Context(), user, inst.InstallationID)
		if err != nil {
			writeError(w, r, s.Log, err)
			return
		}
		if !instl.Manifest.HasPermission(models.PermissionNetwork) {
			metrics.ImageDenied()
			writeError(w, r, s.Log, models.Errorf(models.ErrImageDenied, "plugin %s does not request the network permission, so it may not show images", instl.PluginID))
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
