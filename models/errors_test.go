package models

import (
	"reflect"
	"testing"
)

func TestErrorExtensions(t *testing.T) {
	three := 3
	problems := []Problem{{Path: "/id", Code: "required", Message: "id is required"}}
	tests := []struct {
		err  *Error
		want map[string]any
	}{
		{Errorf(ErrNotFound, "no such Instance"), map[string]any{"code": string(ErrNotFound)}},
		{&Error{Code: ErrCapabilityFailed, Reason: ReasonExit, ExitCode: &three}, map[string]any{"code": "CAPABILITY_FAILED", "reason": "exit", "exitCode": 3}},
		{&Error{Code: ErrPackageRejected, Problems: problems}, map[string]any{"code": "PACKAGE_REJECTED", "problems": problems}},
	}
	for _, tt := range tests {
		if got := tt.err.Extensions(); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%v: Extensions() = %v, want %v", tt.err, got, tt.want)
		}
	}
}
