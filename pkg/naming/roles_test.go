package naming_test

import (
	"strings"
	"testing"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
)

// A role's LeaderWorkerSet takes <serving>-<role>, whose derived names are those of a serving of
// that name: the longest serving name with roles must fit them all for the longest role name.
func TestTheLongestNameWithRolesFitsEveryDerivedName(t *testing.T) {
	longest := strings.Repeat("a", v1.MaxRoleNameLength)
	for _, role := range v1.RoleNames() {
		for derived, valid := range derivedNames(naming.RoleWorkloadName(longest, role)) {
			if errs := valid(derived); len(errs) > 0 {
				t.Errorf("%s (role %s of a %d-character name): %v", derived, role, len(longest), errs)
			}
		}
	}
	broken := 0
	for derived, valid := range derivedNames(naming.RoleWorkloadName(longest+"a", v1.RolePrefill)) {
		if len(valid(derived)) > 0 {
			broken++
		}
	}
	if broken == 0 {
		t.Errorf("a %d-character name fits every name of its prefill role: MaxRoleNameLength %d is not the maximum", len(longest)+1, v1.MaxRoleNameLength)
	}
}

func TestRoleOfWorkload(t *testing.T) {
	for _, tc := range []struct {
		kind, name, serving string
		role                v1.RoleName
	}{
		{"LeaderWorkerSet", "qwen-prefill", "qwen", v1.RolePrefill},
		{"StatefulSet", "qwen-decode", "qwen", v1.RoleDecode},
		{"StatefulSet", "qwen-decode-12", "qwen", v1.RoleDecode},
		{"LeaderWorkerSet", "qwen", "", ""},
		{"StatefulSet", "qwen-3", "", ""},
		{"LeaderWorkerSet", "-prefill", "", ""},
		{"Pod", "qwen-prefill", "", ""},
	} {
		s, r := naming.RoleOfWorkload(tc.kind, tc.name)
		if s != tc.serving || r != tc.role {
			t.Errorf("%s %s: %q, %q; want %q, %q", tc.kind, tc.name, s, r, tc.serving, tc.role)
		}
	}
	if got := naming.RoleServiceName("qwen", v1.RoleDecode); got != "qwen-decode-api" {
		t.Errorf("RoleServiceName = %q", got)
	}
}
