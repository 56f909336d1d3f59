package imageproxy

import (
	"errors"
	"net/netip"
	"syscall"

	"pluginhost/egress"
)

// deniedRange reports whether a is outside public unicast, and names its
// range (egress.Denied).
func deniedRange(a netip.Addr) (name string, denied bool) { return egress.Denied(a) }

// dialControl is the dial-time address check of the default policy (public
// unicast only), as a Rejection.
func dialControl(network, address string, c syscall.RawConn) error {
	return asRejection((*egress.Policy)(nil).Control(network, address, c))
}

// asRejection turns an egress refusal into the proxy's Rejection, with the
// same reason; other errors pass unchanged.
func asRejection(err error) error {
	var e *egress.Error
	if errors.As(err, &e) {
		return &Rejection{Reason: e.Reason, Detail: e.Detail, Host: e.Host}
	}
	return err
}
