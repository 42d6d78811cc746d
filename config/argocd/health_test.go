package argocd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// toLua turns decoded JSON into Lua values, the way Argo CD hands objects to health checks.
func toLua(L *lua.LState, v any) lua.LValue {
	switch x := v.(type) {
	case nil:
		return lua.LNil
	case bool:
		return lua.LBool(x)
	case float64:
		return lua.LNumber(x)
	case string:
		return lua.LString(x)
	case []any:
		t := L.NewTable()
		for _, e := range x {
			t.Append(toLua(L, e))
		}
		return t
	case map[string]any:
		t := L.NewTable()
		for k, e := range x {
			t.RawSetString(k, toLua(L, e))
		}
		return t
	}
	panic("unexpected JSON value")
}

func health(t *testing.T, object string) (string, string) {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal([]byte(object), &obj); err != nil {
		t.Fatal(err)
	}
	L := lua.NewState()
	defer L.Close()
	L.SetGlobal("obj", toLua(L, obj))
	if err := L.DoString(HealthLua); err != nil {
		t.Fatalf("health.lua: %v", err)
	}
	hs, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		t.Fatalf("health.lua returned %s, want a table", L.Get(-1).Type())
	}
	return hs.RawGetString("status").String(), hs.RawGetString("message").String()
}

func serving(generation int, status string) string {
	return `{"apiVersion":"serving.kubectl-llm.dev/v1alpha1","kind":"ModelServing","metadata":{"name":"qwen","generation":` +
		itoa(generation) + `},"spec":{"model":"m"}` + status + `}`
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func conditions(observed int, conds ...string) string {
	return `,"status":{"observedGeneration":` + itoa(observed) + `,"conditions":[` + strings.Join(conds, ",") + `]}`
}

func cond(typ, status, reason, msg string) string {
	return `{"type":"` + typ + `","status":"` + status + `","reason":"` + reason + `","message":"` + msg + `"}`
}

func TestHealth(t *testing.T) {
	available := cond("Available", "True", "MinimumGroupsAvailable", "2 of 2 groups ready")
	notDegraded := cond("Degraded", "False", "AsExpected", "no group is failing")
	cases := []struct {
		name, object, status, msgHas string
	}{
		{"no status yet", serving(1, ""), "Progressing", "Waiting for the kubectl-llm operator"},
		{"generation not observed", serving(3, conditions(2, available, cond("Progressing", "True", "RolloutComplete", "done"), notDegraded)), "Progressing", "observe generation 3"},
		{"complete and available", serving(2, conditions(2, available, cond("Progressing", "True", "RolloutComplete", "2 of 2 groups ready on revision qwen-abc"), notDegraded)), "Healthy", "RolloutComplete"},
		{"rolling out", serving(2, conditions(2, available, cond("Progressing", "True", "RollingOut", "1 of 2 groups updated, 1 of 2 ready"), notDegraded)), "Progressing", "1 of 2 groups updated"},
		{"complete but not available", serving(2, conditions(2, cond("Available", "False", "GroupsUnavailable", "0 of 2"), cond("Progressing", "True", "RolloutComplete", "x"), notDegraded)), "Progressing", "RolloutComplete"},
		{"degraded", serving(2, conditions(2, available, cond("Progressing", "True", "Scaling", "x"), cond("Degraded", "True", "InsufficientGPU", "group 2 leader cannot be scheduled: Insufficient nvidia.com/gpu"))), "Degraded", "Insufficient nvidia.com/gpu"},
		{"deadline exceeded", serving(2, conditions(2, available, cond("Progressing", "False", "ProgressDeadlineExceeded", "no progress for more than 30m0s"), notDegraded)), "Degraded", "ProgressDeadlineExceeded"},
		{"paused", serving(2, conditions(2, available, cond("Progressing", "Unknown", "RolloutPaused", "rollout paused"), notDegraded)), "Suspended", "RolloutPaused"},
		{"canary waiting for promotion", serving(2, conditions(2, available, cond("Progressing", "True", "CanaryHeld", "canary: groups 2 and above"), notDegraded)), "Suspended", "CanaryHeld"},
		{"invalid spec", serving(2, conditions(1, cond("Degraded", "True", "InvalidSpec", "spec.template: Forbidden"))), "Progressing", "observe generation 2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, msg := health(t, tc.object)
			if status != tc.status || !strings.Contains(msg, tc.msgHas) {
				t.Errorf("health = %s %q, want %s with %q", status, msg, tc.status, tc.msgHas)
			}
		})
	}
}

func TestTheGitOpsDocShowsThisHealthCheck(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "gitops.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(HealthLua), "\n") {
		if !strings.Contains(string(doc), line) {
			t.Fatalf("docs/gitops.md does not carry health.lua as it is; missing line %q", line)
		}
	}
}
