package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

// roleNames are the role names a serving may have, for messages: "prefill or decode".
func roleNames(sep string) string { return strings.Join(roleNameList(), sep) }

func roleNameList() []string {
	names := make([]string, 0, len(v1.RoleNames()))
	for _, n := range v1.RoleNames() {
		names = append(names, string(n))
	}
	return names
}

// validateRoleFlag checks a --role value against the role names the API knows.
func validateRoleFlag(role string) error {
	if !slices.Contains(v1.RoleNames(), v1.RoleName(role)) {
		return fmt.Errorf("--role must be %s, not %q", roleNames(" or "), role)
	}
	return nil
}

// checkRoleFlag matches --role with the serving: a serving with roles needs it (when the command
// acts on groups, what names the groups' flag), one without refuses it, and the role must be one
// of the serving's.
func checkRoleFlag(ms *v1.ModelServing, role string, given bool, verb, what string) error {
	switch {
	case given && len(ms.Spec.Roles) == 0:
		return fmt.Errorf("--role %s: serving %q has no roles (spec.roles is empty); %s it without --role", role, ms.Name, verb)
	case given && ms.Spec.Role(v1.RoleName(role)) == nil:
		return fmt.Errorf("--role %s: serving %q has no role %s; its roles are %s", role, ms.Name, role, servingRoles(ms))
	case !given && len(ms.Spec.Roles) > 0 && what != "":
		return fmt.Errorf("serving %q has roles (%s), each with its own groups: pass --role with %s, e.g. kubectl llm %s %s --role %s %s",
			ms.Name, servingRoles(ms), what, verb, ms.Name, ms.Spec.Roles[len(ms.Spec.Roles)-1].Name, exampleOf(what))
	}
	return nil
}

func exampleOf(flag string) string {
	switch flag {
	case "--replicas":
		return "--replicas 2"
	case "--group":
		return "--group 0"
	}
	return flag
}

// servingRoles lists a serving's roles: "prefill, decode".
func servingRoles(ms *v1.ModelServing) string {
	names := make([]string, 0, len(ms.Spec.Roles))
	for _, r := range ms.Spec.Roles {
		names = append(names, string(r.Name))
	}
	return strings.Join(names, ", ")
}

func completeRoleNames(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return roleNameList(), cobra.ShellCompDirectiveNoFileComp
}
