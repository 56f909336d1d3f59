package models

import (
	"errors"
	"fmt"
	"time"
)

// Code is a stable, machine-readable error code. GraphQL reports it as
// extensions.code and REST as error.code.
type Code string

// Storage error codes of the specification.
const (
	// ErrPermissionDenied: missing permission, namespace or AI access; a disabled,
	// unknown or foreign Instance.
	ErrPermissionDenied Code = "PLUGIN_STORAGE_PERMISSION_DENIED"
	// ErrNotFound: the key does not exist.
	ErrNotFound Code = "PLUGIN_STORAGE_NOT_FOUND"
	// ErrQuotaExceeded: a value, namespace or Installation limit would be exceeded.
	ErrQuotaExceeded Code = "PLUGIN_STORAGE_QUOTA_EXCEEDED"
	// ErrConflict: duplicate create, stale revision or stale package generation.
	ErrConflict Code = "PLUGIN_STORAGE_CONFLICT"
	// ErrInvalid: malformed key, JSON, query or arguments.
	ErrInvalid Code = "PLUGIN_STORAGE_INVALID"
)

// Codes of the public contract outside storage.
const (
	ErrUnauthenticated Code = "UNAUTHENTICATED"
	ErrForbidden       Code = "FORBIDDEN"
	ErrBadUserInput    Code = "BAD_USER_INPUT"
	ErrPackageRejected Code = "PACKAGE_REJECTED"
	ErrMigrationFailed Code = "MIGRATION_FAILED"
	// ErrCapabilityFailed: a run of a plugin capability failed; Error.Reason
	// says why (one of the Reason* constants).
	ErrCapabilityFailed Code = "CAPABILITY_FAILED"
	// ErrImageDenied: the manifest lacks `network` or the Instance has no network grant.
	ErrImageDenied Code = "PERMISSION_DENIED"
	// ErrImageRejected: the image proxy refused the URL or the fetched image.
	ErrImageRejected Code = "UI_IMAGE_REJECTED"
	// ErrTooManyRequests: the caller must wait (Error.RetryAfter says how
	// long) before trying again: 429 with Retry-After.
	ErrTooManyRequests Code = "TOO_MANY_REQUESTS"
	// ErrInternal: anything that is not an application error; its detail is only logged.
	ErrInternal Code = "INTERNAL"
)

// Error is the application error: a code and a message meant for the caller.
// Problems lists individual findings (for example every broken manifest rule).
type Error struct {
	Code     Code
	Message  string
	Problems []Problem
	// Reason refines CAPABILITY_FAILED: one of the Reason* constants.
	Reason string
	// ExitCode is the exit code of a capability run that failed with
	// ReasonExit.
	ExitCode *int
	// RetryAfter is how long a caller refused with TOO_MANY_REQUESTS must
	// wait.
	RetryAfter time.Duration
	// Request and Host name the fetch a refused fetch round is about: the
	// request's id in the round, and the host of its URL (with its port
	// when not 443; empty when the URL names none).
	Request, Host string
	// Connection names the connection a failed run needed and could not
	// use (connection_required), or whose credential its provider refused
	// during the run (the run failed after a fetch with it was answered
	// 401 or 403).
	Connection string
}

// Reasons of CAPABILITY_FAILED (GraphQL extensions.reason).
const (
	ReasonNoModule           = "no_module"           // the capability names no module the host can run
	ReasonTimeout            = "timeout"             // the run outlived its wall time
	ReasonMemory             = "memory"              // the module wanted more memory than a run may have
	ReasonExit               = "exit"                // the module exited with a code other than 0 (or trapped)
	ReasonBadOutput          = "bad_output"          // standard output is not one ExtensionResult
	ReasonOutputTooLarge     = "output_too_large"    // standard output exceeded its limit
	ReasonOutputSchema       = "output_schema"       // data breaks the capability's output_schema
	ReasonBusy               = "busy"                // no run slot freed up before the deadline
	ReasonNetworkDenied      = "network_denied"      // a fetch the policy refuses: no permission or grant, a host not listed, an address not public, plain http, a forbidden header
	ReasonConnectionRequired = "connection_required" // a fetch needs a connection the user has not connected
	ReasonCrash              = "crash"               // the engine failed while compiling or running the module; the run was contained
)

// CapabilityFailed returns a CAPABILITY_FAILED error with its reason.
func CapabilityFailed(reason, format string, args ...any) *Error {
	return &Error{Code: ErrCapabilityFailed, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// ConnectionRequired returns a CAPABILITY_FAILED error of reason
// connection_required that names the connection.
func ConnectionRequired(connection, format string, args ...any) *Error {
	e := CapabilityFailed(ReasonConnectionRequired, format, args...)
	e.Connection = connection
	return e
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Extensions returns the error as a GraphQL error's extensions carry it
// (and the CLI prints it): code, and reason, exitCode, problems, the
// refused fetch's request and host, and the connection when set. The
// message is not among them.
func (e *Error) Extensions() map[string]any {
	ext := map[string]any{"code": string(e.Code)}
	if e.Reason != "" {
		ext["reason"] = e.Reason
	}
	if e.ExitCode != nil {
		ext["exitCode"] = *e.ExitCode
	}
	if e.Request != "" {
		ext["request"], ext["host"] = e.Request, e.Host
	}
	if e.Connection != "" {
		ext["connection"] = e.Connection
	}
	if len(e.Problems) > 0 {
		ext["problems"] = e.Problems
	}
	return ext
}

// Errorf returns an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of an application error, "" for nil, or
// ErrInternal for any other error.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ErrInternal
}

// ErrorMessage returns the message of an application error, or a generic text
// that reveals nothing of an internal failure.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// Problem is one finding of a validation: where (a JSON Pointer, and for a plugin
// folder the file), a stable code, and a message that states the rule.
type Problem struct {
	File    string `json:"file,omitempty"`
	Path    string `json:"path"`
	Code    string `json:"code"`
	Message string `json:"message"`
}
